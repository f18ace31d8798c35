"""What every data-file reader shares: the chunk sizes, a :class:`Chunk` of rows, the
:class:`ReadOptions` a caller gives, the :class:`Skipped` rows' report, the matching of a
file's columns to the model's features (:func:`resolve_columns`) and the :class:`Reader` base
class; the readers themselves are in :mod:`~quickscorer.inputs.readers`.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError

#: bytes of text read from the file at a time, and the dense rows of one chunk take about
#: CHUNK_BYTES (float64), at least MIN_CHUNK_ROWS whatever the width: large enough that a
#: chunk's fixed costs vanish, small enough that memory does not grow with the file
#: (re-measure: python -m benchmarks.score_files --parts pipeline,memory)
BLOCK_BYTES = 4 << 20
CHUNK_BYTES = 16 << 20
MIN_CHUNK_ROWS = 256
MAX_CHUNK_ROWS = 1 << 16
#: Parquet row groups of at most this many bytes (uncompressed) are read whole, far faster than
#: in batches; larger ones in batches of a chunk's rows, so memory stays bounded
#: (re-measure: python -m benchmarks.score_files --parts parquet)
ROW_GROUP_BYTES = 64 << 20
#: line numbers of skipped rows kept for the report (the count is exact)
SKIPPED_KEPT = 20

#: the name a kept column can take for the input's row numbers (0-based), in every format
ROW_COLUMN = "row"


def default_chunk_rows(n_features: int) -> int:
    return int(min(MAX_CHUNK_ROWS, max(MIN_CHUNK_ROWS, CHUNK_BYTES // (8 * max(1, n_features)))))


@dataclass
class Chunk:
    """Rows of an input and what is carried with them."""
    X: np.ndarray                     # (rows, n_features), float64 or float32, C order
    first_row: int                    # the input's row number of X[0] (0-based)
    columns: dict = field(default_factory=dict)   # kept columns by name: numpy or pyarrow arrays
    query: np.ndarray | None = None   # each row's query id where a query column is set
    done: float | None = None         # the fraction of the input read so far, where known

    def __len__(self) -> int:
        return self.X.shape[0]


@dataclass
class ReadOptions:
    """What to read besides the features; the command line's options of the same names."""
    label_column: str | int | None = None   # dropped (a name, or a column number)
    query_column: str | int | None = None   # query ids (LibSVM: qid:)
    keep: Sequence[str | int] = ()          # columns carried to the output
    drop: Sequence[str | int] = ()          # columns read past
    header: str = "auto"                    # CSV/TSV: "auto", "yes" or "no"
    on_error: str = "raise"                 # "raise" or "skip" (text formats: bad lines)
    chunk_rows: int | None = None
    #: the features the model reads (a bool per feature; None: all): Parquet and Arrow read
    #: only these columns (typed, so no value of another needs checking) and fill the rest
    #: with 0.0, which no tree looks at
    used: np.ndarray | None = None
    #: the model's text categories (``Ensemble.category_labels``): a Parquet or Arrow column
    #: of text, integers or a dictionary for such a feature is read through them
    category_labels: dict | None = None
    #: a LibSVM file's index of the first feature column (``Ensemble.feature_id_base``: 1
    #: for a RankLib model, whose feature k is column k - 1; index 0 is then read past, as
    #: RankLib reads it)
    index_base: int = 0


@dataclass
class Skipped:
    """Bad lines read past with ``on_error="skip"``: how many, and the first line numbers."""
    count: int = 0
    lines: list = field(default_factory=list)

    def add(self, first_line: int, rel: np.ndarray, n: int) -> None:
        room = SKIPPED_KEPT - len(self.lines)
        if room > 0:
            self.lines.extend(int(first_line + x) for x in rel[:min(n, room)])
        self.count += n


def _default_names(model_names, n: int) -> bool:
    """Whether the model's feature names are the ones a library makes up for unnamed data."""
    if model_names is None:
        return True
    return (list(model_names) == [f"Column_{j}" for j in range(n)]
            or list(model_names) == [f"f{j}" for j in range(n)])


@dataclass
class Columns:
    """Where each feature and each other wanted column is among a file's columns."""
    feature_of: list          # per file column: its feature number, or None
    label: int | None         # file column of the label
    query: int | None         # file column of the query ids
    keep: list                # (name, file column or None for the row number)


def _find(names, spec, what: str) -> int:
    if isinstance(spec, int) or (isinstance(spec, str) and spec.isdigit() and
                                 (names is None or spec not in names)):
        j = int(spec)
        n = len(names) if names is not None else None
        if j < 0 or (n is not None and j >= n):
            raise InputError(f"{what} {j} is outside the file's {n} columns")
        return j
    if names is None:
        raise InputError(f"{what} {spec!r} is a name, but the file has no header: give a "
                         f"column number")
    if spec not in names:
        raise InputError(f"{what} {spec!r} is not a column of the file (its columns: "
                         f"{_short(names)})")
    return names.index(spec)


def _short(names, k: int = 8) -> str:
    names = list(names)
    return ", ".join(map(repr, names[:k])) + (f", ... ({len(names)} in all)"
                                             if len(names) > k else "")


def resolve_columns(names: list | None, n_cols: int, model_names, n_features: int,
                    opts: ReadOptions, source: str) -> Columns:
    """Match a file's columns to the model's features.

    With column names (a CSV header, Parquet, Arrow) and a model whose feature names all appear
    among them, features are matched by name, in any order; every other column must be named
    by ``label_column``, ``query_column``, ``keep`` or ``drop``, and a column that is none of
    these is an error naming it. Otherwise (no header, or a model with only made-up names such
    as LightGBM's ``Column_0`` or XGBoost's ``f0``) the columns left after those options are the
    features in order, and their count must be the model's. A model with real names that a
    file lacks is an error naming the missing ones.
    """
    used: dict[int, str] = {}

    def claim(spec, what):
        j = _find(names, spec, what)
        if j >= n_cols:
            raise InputError(f"{source}: {what} {spec!r} is outside the file's {n_cols} columns")
        if j in used and {used[j], what} == {"query column", "kept column"}:
            return j                            # the query ids written out too
        if j in used:
            raise InputError(f"{source}: column {spec!r} is both the {used[j]} and the {what}")
        used[j] = what
        return j

    label = claim(opts.label_column, "label column") if opts.label_column is not None else None
    query = claim(opts.query_column, "query column") if opts.query_column is not None else None
    keep = []
    for spec in opts.keep:
        if spec == ROW_COLUMN and (names is None or ROW_COLUMN not in names):
            keep.append((ROW_COLUMN, None))
            continue
        j = claim(spec, "kept column")
        keep.append((names[j] if names is not None else str(spec), j))
    for spec in opts.drop:
        claim(spec, "dropped column")
    feature_of: list = [None] * n_cols
    if (names is not None and not _default_names(model_names, n_features)):
        missing = [n for n in model_names if n not in names]
        if missing:
            raise InputError(f"{source}: the model's feature{'s' if len(missing) > 1 else ''} "
                             f"{_short(missing)} {'are' if len(missing) > 1 else 'is'} not "
                             f"among the file's columns")
        index = {n: f for f, n in enumerate(model_names)}
        matched: set = set()
        for j, n in enumerate(names):
            if j in used:
                continue
            if n not in index:
                raise InputError(f"{source}: column {n!r} is not a feature of the model; name "
                                 f"it with --keep, --drop, --label-column or --query-column")
            if index[n] in matched:
                raise InputError(f"{source}: feature {n!r} appears twice among the columns")
            matched.add(index[n])
            feature_of[j] = index[n]
        return Columns(feature_of, label, query, keep)
    rest = [j for j in range(n_cols) if j not in used]
    if len(rest) != n_features:
        told = (f"{n_cols} columns, {len(rest)} after the label, query, kept and dropped ones"
                if used else f"{n_cols} columns")
        raise InputError(f"{source}: the file has {told}; the model expects {n_features} "
                         f"features")
    for f, j in enumerate(rest):
        feature_of[j] = f
    return Columns(feature_of, label, query, keep)


class Reader:
    """What every reader has: its source, options and progress."""
    format = ""

    def __init__(self, path, n_features: int, fill: float, model_names, opts: ReadOptions):
        self.path = Path(path)
        self.source = str(path)
        self.n_features = n_features
        self.fill = fill
        self.model_names = model_names
        self.opts = opts
        self.chunk_rows = int(opts.chunk_rows or default_chunk_rows(n_features))
        if self.chunk_rows < 1:
            raise InputError(f"chunk_rows must be positive, got {opts.chunk_rows}")
        if opts.on_error not in ("raise", "skip"):
            raise InputError(f"on_error must be 'raise' or 'skip', got {opts.on_error!r}")
        self.skipped = Skipped()
        self.rows = 0

    def chunks(self) -> Iterator[Chunk]:
        raise NotImplementedError

    def close(self) -> None:
        pass


