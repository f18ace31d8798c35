"""Scoring a data file to a results file in bounded memory: what ``quickscorer score`` runs.

    import quickscorer
    from quickscorer.batch import score_file
    model = quickscorer.load("model.txt")
    summary = score_file(model, "candidates.svm.gz", "scores.parquet", keep=["qid", "row"],
                         rank=True, n_threads=0)
    print(summary.line())

One thread reads and parses the next chunk (in C, the GIL released) while the calling thread
scores the current one on ``n_threads`` threads and writes it; each chunk's scores are those of
``model.predict`` on the same rows, so the output does not depend on the chunk size or the
thread count. The output goes to a temporary file renamed at the end (:mod:`quickscorer.outputs`):
an error or an interrupt leaves no output behind.
"""
from __future__ import annotations

import dataclasses
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import InputError
from .explain import feature_labels
from .inputs.readers import (
    SUFFIX_FORMAT,
    ReadOptions,
    detect_format,
    open_input,
    query_file_for,
    read_query_sizes,
)
from .model import Model
from .outputs import open_output
from .outputs import output_format as _output_format
from .progress import Progress
from .ranking import group_starts, rank_scores, repeated_query

#: chunks read ahead of the one being scored: enough to keep the scoring thread fed when one
#: chunk reads slowly, few enough to bound memory (re-measure: python
#: benchmarks/score_files.py --parts pipeline,memory)
READ_AHEAD = 2


@dataclass
class Summary:
    """What a run did: rows read and written, bad lines skipped, time taken."""
    source: str
    output: str | None
    rows: int = 0
    written: int = 0
    seconds: float = 0.0
    skipped: int = 0
    skipped_lines: list = field(default_factory=list)

    def line(self) -> str:
        rate = self.rows / self.seconds if self.seconds > 0 else float("inf")
        text = (f"scored {self.rows:,} rows of {self.source} in {self.seconds:.2f} s "
                f"({rate:,.0f} rows/s)")
        if self.written != self.rows:
            text += f", wrote {self.written:,}"
        if self.output:
            text += f" to {self.output}"
        if self.skipped:
            shown = ", ".join(map(str, self.skipped_lines))
            more = ", ..." if self.skipped > len(self.skipped_lines) else ""
            text += f"; skipped {self.skipped:,} bad lines ({shown}{more})"
        return text


def _concat(a, b):
    if isinstance(a, np.ndarray):
        return np.concatenate([a, b])
    import pyarrow as pa
    return pa.concat_arrays([a, b])


def _take(col, idx: np.ndarray):
    if isinstance(col, np.ndarray):
        return col[idx]
    return col.take(idx)


def _slice(col, start: int, stop: int):
    if isinstance(col, np.ndarray):
        return col[start:stop]
    return col.slice(start, stop - start)


class _Ranker:
    """Ranks within queries across chunks: the last query of a chunk waits for the next one,
    so a query split across chunks is ranked as one; a query that comes back after another
    one is an error (rows of a query must be consecutive)."""

    def __init__(self, source: str, score_column: str, top: int | None, with_rank: bool):
        self.source = source
        self.score_column = score_column
        self.top = top
        self.with_rank = with_rank
        self.carry = None          # (table, query, first row) of the unfinished query
        self.seen: set = set()

    def feed(self, table: dict, query: np.ndarray, first_row: int):
        """The rows of the queries this chunk completes, ranked (None if it completes none)."""
        if self.carry is not None:
            t0, q0, first_row = self.carry
            table = {k: _concat(t0[k], table[k]) for k in table}
            query = np.concatenate([q0, query])
            self.carry = None
        n = len(query)
        if n == 0:
            return None
        cut = int(group_starts(query)[-1])
        self.carry = ({k: _slice(c, cut, n) for k, c in table.items()}, query[cut:],
                      first_row + cut)
        return self._emit({k: _slice(c, 0, cut) for k, c in table.items()}, query[:cut],
                          first_row)

    def finish(self):
        """The last query's rows, ranked."""
        if self.carry is None:
            return None
        table, query, first_row = self.carry
        self.carry = None
        return self._emit(table, query, first_row)

    def _emit(self, table: dict, query: np.ndarray, first_row: int):
        if len(query) == 0:
            return None
        starts = group_starts(query)
        again = repeated_query(query, starts, self.seen)
        if again is not None:
            key, s = again
            raise InputError(f"{self.source}: query {key!r} comes back at row "
                             f"{first_row + s + 1} after other queries; the rows of "
                             f"a query must be consecutive (sort the file by query)")
        ranking = rank_scores(np.asarray(table[self.score_column]), starts, self.top)
        if self.with_rank:
            table["rank"] = ranking.rank
        if self.top is not None:
            table = {k: _take(c, ranking.order) for k, c in table.items()}
        return table


def used_features(model: Model) -> np.ndarray:
    """A bool per input column: whether any split, linear leaf or CTR feature of the model
    reads it."""
    return model.ensemble.inputs_read()


def _contribution_columns(model: Model) -> list[str]:
    """The output columns of the contributions, in the order Model.contributions gives them
    (each output's features, then its bias): ``contrib_<feature>`` and ``contrib_bias``, with
    the output's number after ``contrib_`` for several outputs. Features without names are
    ``f0``, ``f1``, ... (XGBoost's names for them)."""
    names = feature_labels(model.feature_names, model.n_features)
    columns = []
    for k in range(model.n_outputs):
        prefix = "contrib_" if model.n_outputs == 1 else f"contrib_{k}_"
        columns += [prefix + n for n in names] + [prefix + "bias"]
    if len(set(columns)) != len(columns):
        raise InputError("the model's feature names repeat: contributions need a column "
                         "each")
    return columns


@dataclass(frozen=True)
class ScoreOptions:
    """How :func:`score_file` reads, scores and writes (every keyword of ``score_file``).

    Reading: ``format`` (the input's, default detected), ``label_column``,
    ``query_column``, ``keep``, ``drop``, ``input_header``, ``on_error``, ``chunk_rows``, as
    :func:`quickscorer.inputs.readers.open_input` and
    :class:`~quickscorer.inputs.chunks.ReadOptions` read them. Scoring: ``raw_score``,
    ``leaf``, ``contrib``, ``algorithm``, ``n_threads``, ``missing`` (a value read as NaN, as
    for :meth:`~quickscorer.Model.predict`), ``margin_column`` (a column of each row's
    margin: XGBoost's ``base_margin``, LightGBM's ``init_score``; read past, written only
    where kept). Ranking: ``rank``, ``top`` and the
    queries' rows: ``query_column``, or ``group`` (a file of query sizes, one a line, as
    LightGBM's), else the ``.query`` file beside the data file where there is one (LightGBM's
    rule), else LibSVM's ``qid:``. Writing:
    ``output_format``, ``header`` (as :func:`quickscorer.outputs.open_output` writes them),
    ``progress`` (a bar on standard error; default where it is a terminal).
    """

    format: str | None = None
    output_format: str | None = None
    header: bool | None = None
    raw_score: bool = False
    leaf: bool = False
    algorithm: str | None = None
    n_threads: int | None = 1
    label_column: object = None
    query_column: object = None
    keep: tuple = ()
    drop: tuple = ()
    input_header: str = "auto"
    rank: bool = False
    top: int | None = None
    on_error: str = "raise"
    chunk_rows: int | None = None
    progress: bool | None = None
    contrib: bool = False
    group: object = None
    missing: float | None = None
    margin_column: object = None

    def __post_init__(self):
        object.__setattr__(self, "keep", tuple(self.keep))
        object.__setattr__(self, "drop", tuple(self.drop))

    @property
    def ranking(self) -> bool:
        return self.rank or self.top is not None

    def read_options(self, model: Model, source, output) -> tuple[ReadOptions, Path | None]:
        """The reader's options for ``model`` and the query file the ranking reads (None:
        the queries come from a column), after checking that these options go together (an
        InputError names what does not)."""
        if self.top is not None and int(self.top) < 1:
            raise InputError(f"top must be a positive number of rows, got {self.top}")
        if self.keep and _output_format(output, self.output_format) == "npy":
            raise InputError("an .npy output holds numbers only (scores, ranks, leaves); write "
                             "kept columns to CSV or Parquet")
        if self.contrib and self.leaf:
            raise InputError("contributions explain scores: ask for them without leaves")
        keep = self.keep
        if self.margin_column is not None:
            if self.leaf:
                raise InputError("a margin moves scores, not leaves: ask for it without "
                                 "leaves")
            if self.margin_column not in keep:
                keep = keep + (self.margin_column,)
        opts = ReadOptions(label_column=self.label_column, query_column=self.query_column,
                           keep=keep, drop=self.drop, header=self.input_header,
                           on_error=self.on_error, chunk_rows=self.chunk_rows,
                           used=used_features(model),
                           category_labels=model.ensemble.category_labels,
                           index_base=model.ensemble.feature_id_base)
        if self.group is not None and self.query_column is not None:
            raise InputError("the queries come from a query column or a query file, not both")
        if not self.ranking:
            return opts, None
        if self.leaf or model.n_outputs != 1:
            raise InputError("ranking needs one score per row (not leaves, not several "
                             "outputs)")
        if opts.query_column is not None:
            return opts, None
        group = Path(str(self.group)) if self.group is not None else query_file_for(source)
        if group is not None:
            if self.on_error != "raise":
                raise InputError(f"{group} counts the rows of every line: skipping bad lines "
                                 f"would move the queries (leave --on-error as raise)")
            return opts, group
        if (self.format or detect_format(source)[0]) != "libsvm":
            raise InputError("ranking needs the queries: --query-column NAME, --group FILE (a "
                             "query size a line), or a .query file beside the data")
        opts.query_column = "qid"
        return opts, None


class _QueryFile:
    """Each row's query from a file of query sizes, chunk by chunk; the rows must add up to
    the sizes' sum."""

    def __init__(self, path: Path, source):
        self.path, self.source = path, source
        sizes = read_query_sizes(path)
        self.total = int(sizes.sum())
        self.query = np.repeat(np.arange(sizes.shape[0], dtype=np.int64), sizes)

    def of(self, first_row: int, n: int) -> np.ndarray:
        if first_row + n > self.total:
            raise InputError(f"{self.path}: its query sizes add up to {self.total:,} rows; "
                             f"{self.source} has more")
        return self.query[first_row:first_row + n]

    def check(self, rows: int) -> None:
        if rows != self.total:
            raise InputError(f"{self.path}: its query sizes add up to {self.total:,} rows; "
                             f"{self.source} has {rows:,}")


def _scored(model: Model, o: ScoreOptions, item, contrib_names) -> dict:
    """A chunk's output columns: the kept ones, then its scores (or leaves) and
    contributions."""
    table = dict(item.columns)
    margin = None
    if o.margin_column is not None:
        margin = _margin_values(table, o.margin_column)
        if o.margin_column not in o.keep:
            del table[o.margin_column]
    if o.leaf:
        out = model.predict_leaf(item.X, algorithm=o.algorithm, n_threads=o.n_threads,
                                 source_ids=True, missing=o.missing)
        for t in range(out.shape[1]):
            table[f"leaf_{t}"] = out[:, t]
        return table
    out = model.predict(item.X, raw_score=o.raw_score, algorithm=o.algorithm,
                        n_threads=o.n_threads, missing=o.missing, base_margin=margin)
    if out.ndim == 1:
        table["score"] = out
    else:
        for j in range(out.shape[1]):
            table[f"score_{j}"] = out[:, j]
    if contrib_names is not None:
        values = model.contributions(item.X, n_threads=o.n_threads, missing=o.missing)
        values = values.reshape(values.shape[0], -1)
        for j, name in enumerate(contrib_names):
            table[name] = values[:, j]
    return table


def _margin_values(table: dict, column) -> np.ndarray:
    """The margin column of a chunk as float64 numbers, or an InputError naming it."""
    values = table[column]
    try:
        return np.asarray(values.to_numpy(zero_copy_only=False) if hasattr(values, "to_numpy")
                          else values, np.float64)
    except (TypeError, ValueError):
        raise InputError(f"the margin column {column!r} holds values that are not "
                         f"numbers") from None


class _ReadAhead:
    """The reader's chunks, read and parsed on a thread of their own at most READ_AHEAD
    ahead of the one being scored; an error of the reader is raised where the chunks are
    taken, and :meth:`close` stops the thread whatever state it is in."""

    _END = object()

    def __init__(self, reader):
        self.chunks: queue.Queue = queue.Queue(maxsize=READ_AHEAD)
        self.stop = threading.Event()
        self.reader = reader
        self.thread = threading.Thread(target=self._produce, name="quickscorer-read",
                                       daemon=True)
        self.thread.start()

    def _produce(self):
        try:
            for chunk in self.reader.chunks():
                while not self.stop.is_set():
                    try:
                        self.chunks.put(chunk, timeout=0.05)
                        break
                    except queue.Full:
                        continue
                if self.stop.is_set():
                    return
            self.chunks.put(self._END)
        except BaseException as exc:           # handed to the scoring thread
            self.chunks.put(exc)

    def __iter__(self):
        while True:
            item = self.chunks.get()
            if item is self._END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self):
        self.stop.set()
        while self.thread.is_alive():          # unblock the reader, then let it finish
            try:
                self.chunks.get(timeout=0.05)
            except queue.Empty:
                pass
        self.thread.join()


def score_file(model: Model, source, output=None, options: ScoreOptions | None = None,
               **keywords) -> Summary:
    """Score every row of ``source`` and write the results to ``output`` (None: standard
    output), chunk by chunk, as ``options`` (a :class:`ScoreOptions`) and ``keywords`` (its
    fields, which replace the options') say.

    The columns written: the kept ones (in the order given), then ``score`` (``score_0`` ...
    for several outputs; ``leaf_0`` ... with ``leaf``), then with ``contrib`` each row's SHAP
    contributions (:meth:`~quickscorer.Model.contributions`: ``contrib_<feature>`` per feature
    by the model's names, then ``contrib_bias``; ``contrib_<output>_<feature>`` for several
    outputs), then ``rank`` with ``rank``. ``rank`` / ``top`` need a query column (LibSVM's
    ``qid:``, or ``query_column``): ``rank`` is each row's rank within its query (1 the best
    score), ``top=K`` keeps each query's best K rows, best first.
    """
    o = dataclasses.replace(options or ScoreOptions(), **keywords)
    opts, group = o.read_options(model, source, output)
    queries = None if group is None else _QueryFile(group, source)
    contrib_names = _contribution_columns(model) if o.contrib else None
    fill = model.ensemble.absent_value
    t0 = time.perf_counter()
    reader = open_input(source, model.n_features, fill, model.feature_names, opts, o.format)
    try:
        writer = open_output(output, o.output_format, o.header)
    except BaseException:
        reader.close()
        raise
    summary = Summary(str(source), None if output is None else str(output))
    ranker = _Ranker(str(source), "score", o.top, o.rank) if o.ranking else None
    bar = Progress(f"scoring {Path(str(source)).name}", o.progress)
    ahead = _ReadAhead(reader)
    try:
        for item in ahead:
            table = _scored(model, o, item, contrib_names)
            summary.rows += len(item)
            if ranker is not None:
                query = (item.query if queries is None
                         else queries.of(item.first_row, len(item)))
                table = ranker.feed(table, query, item.first_row)
            if table:
                writer.write(table)
            bar.update(summary.rows, item.done)
        if queries is not None:
            queries.check(summary.rows)
        if ranker is not None:
            table = ranker.finish()
            if table:
                writer.write(table)
        writer.close()
    except BaseException:
        ahead.stop.set()
        writer.abort()
        raise
    finally:
        ahead.close()
        bar.close()
        reader.close()
    summary.written = writer.rows
    summary.skipped = reader.skipped.count
    summary.skipped_lines = list(reader.skipped.lines)
    summary.seconds = time.perf_counter() - t0
    return summary


#: the output format for each input format when scoring many files into a folder
_OUTPUT_FOR = {"parquet": "parquet", "arrow": "parquet", "csv": "csv", "tsv": "tsv",
               "libsvm": "tsv", "npy": "npy"}


def output_path(source, out_dir, output_format: str | None = None,
                format: str | None = None) -> Path:
    """Where the results of ``source`` go in ``out_dir``: its name without the data and
    compression suffixes, with the output format's (Parquet for Parquet and Arrow inputs, the
    input's own for CSV/TSV and .npy, TSV for LibSVM, unless ``output_format`` says)."""
    p = Path(str(source))
    if format is None:
        suffixes = [x.lower() for x in p.suffixes if x.lower() != ".gz"]
        format = SUFFIX_FORMAT.get(suffixes[-1]) if suffixes else None
    fmt = output_format or _OUTPUT_FOR[format or detect_format(p)[0]]
    name = p.name
    for _ in range(2):
        stem, dot, suffix = name.rpartition(".")
        if dot and stem and ("." + suffix.lower() in SUFFIX_FORMAT or suffix.lower() == "gz"):
            name = stem
    return Path(out_dir) / f"{name}.{fmt}"


def _score_one(model: Model, source: str, output: str, options: dict) -> Summary:
    return score_file(model, source, output, progress=False, **options)


def score_files(model: Model, inputs, out_dir, *, scheduler: str | None = None,
                workers: int | None = None, client=None, **options):
    """Score each file of ``inputs`` into ``out_dir`` on a Dask cluster, one task per file;
    returns each file's :class:`quickscorer.batch.Summary`, in the order of ``inputs``.

    The cluster: ``client`` (a ``distributed.Client``), else the scheduler at ``scheduler``,
    else a local cluster of ``workers`` processes (0 or None: one per core) started and
    stopped here. ``options``: the keywords of :func:`quickscorer.batch.score_file`
    (``output_format`` also names the output files' suffix). Output paths are those of
    :func:`quickscorer.batch.output_path`; two inputs that would write the same output are
    refused before anything runs. The files must be readable by the workers at the same
    paths (a shared file system).
    """
    inputs = [str(p) for p in inputs]
    if options.get("group") is not None and len(inputs) > 1:
        raise InputError(f"one query file ({options['group']}) for {len(inputs)} data files: "
                         f"put each file's queries beside it as DATA.query")
    outputs = [str(output_path(p, out_dir, options.get("output_format"),
                               options.get("format"))) for p in inputs]
    seen: dict[str, str] = {}
    for src, dst in zip(inputs, outputs):
        if dst in seen:
            raise InputError(f"{seen[dst]} and {src} would both write {dst}")
        seen[dst] = src
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    try:
        import distributed
    except ImportError:
        raise InputError("scoring on a Dask cluster needs distributed: pip install "
                         "'quickscorer[dask]'") from None
    own = None
    if client is None:
        if scheduler:
            own = client = distributed.Client(scheduler)
        else:
            n = workers or os.cpu_count() or 1
            cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1,
                                               processes=True, dashboard_address=None,
                                               memory_limit=0)
            own = client = distributed.Client(cluster)
    try:
        shared = client.scatter(model, broadcast=True)
        futures = [client.submit(_score_one, shared, os.path.abspath(src),
                                 os.path.abspath(dst), options, pure=False)
                   for src, dst in zip(inputs, outputs)]
        return client.gather(futures)
    finally:
        if own is not None:
            cluster = getattr(own, "cluster", None)
            own.close()
            if cluster is not None:
                cluster.close()
