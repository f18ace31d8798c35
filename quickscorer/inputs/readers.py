"""Data files read in chunks of rows: LibSVM, CSV/TSV, Parquet, Arrow IPC / Feather and ``.npy``,
the text ones optionally gzip-compressed.

:func:`open_input` picks the reader by the file's suffix (``.gz`` looked through) or, where the
suffix says nothing, by its first bytes; ``format=`` overrides both. A reader yields
:class:`Chunk` objects of at most ``chunk_rows`` rows, so memory stays bounded whatever the
file's size. Text is parsed in C with the GIL released (``_rowparse``); Parquet and Arrow
through pyarrow (the ``parquet`` extra). Feature columns of files with column names are matched
to the model's feature names; see :func:`resolve_columns` for the rules.
"""
from __future__ import annotations

import gzip
import mmap
import os
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..errors import InputError
from . import _rowparse
from .arrays import category_number
from .chunks import (
    BLOCK_BYTES,
    ROW_COLUMN,
    ROW_GROUP_BYTES,
    SKIPPED_KEPT,
    Chunk,
    Reader,
    ReadOptions,
    resolve_columns,
)

FORMATS = ("libsvm", "csv", "tsv", "parquet", "arrow", "npy")

#: a file name's last suffix -> the format it names (a ".gz" before it is read through)
SUFFIX_FORMAT = {
    ".libsvm": "libsvm", ".svm": "libsvm", ".svmlight": "libsvm",
    ".csv": "csv", ".tsv": "tsv", ".tab": "tsv",
    ".parquet": "parquet", ".pq": "parquet",
    ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow", ".arrows": "arrow",
    ".npy": "npy",
}

def detect_format(path: str | os.PathLike) -> tuple[str, bool]:
    """The format of a file, and whether it is gzip-compressed: by suffix, else by content."""
    p = Path(path)
    with open(p, "rb") as fh:
        head = fh.read(4096)
    gz = head[:2] == b"\x1f\x8b"
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
        gz = True
    if suffixes and suffixes[-1] in SUFFIX_FORMAT:
        return SUFFIX_FORMAT[suffixes[-1]], gz
    if gz:
        with gzip.open(p, "rb") as fh:
            head = fh.read(4096)
    if head[:4] == b"PAR1":
        return "parquet", gz
    if head[:6] == b"ARROW1" or head[:4] == b"\xff\xff\xff\xff":
        return "arrow", gz
    if head[:6] == b"\x93NUMPY":
        return "npy", gz
    first = head.split(b"\n", 1)[0]
    if re.search(rb"(^|\s)(\d+|qid):\S", first):
        return "libsvm", gz
    return ("tsv" if b"\t" in first else "csv"), gz


class _TextReader(Reader):
    """Blocks of whole lines from a text file, gzip-compressed or not."""

    def __init__(self, path, n_features, fill, model_names, opts, gz: bool):
        super().__init__(path, n_features, fill, model_names, opts)
        self._raw = open(self.path, "rb")
        self._size = os.fstat(self._raw.fileno()).st_size
        self._fh = gzip.GzipFile(fileobj=self._raw, mode="rb") if gz else self._raw
        self._tail = b""
        self._eof = False
        self.line = 0               # lines consumed before the current block's start
        self.block = b""
        self.pos = 0
        self._skipped_at = np.zeros(SKIPPED_KEPT, np.int64)    # the parsers' skipped lines

    def _done(self) -> float:
        return min(1.0, self._raw.tell() / self._size) if self._size else 1.0

    def _next_block(self) -> bool:
        """Read until the block holds at least one whole line; False at the end of input."""
        while True:
            if self._eof:
                return False
            try:
                data = self._fh.read(BLOCK_BYTES)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise InputError(f"{self.source}: cannot read past line {self.line}: "
                                 f"{exc}") from None
            if not data:
                self._eof = True
                if self._tail:
                    self.block, self._tail, self.pos = self._tail + b"\n", b"", 0
                    return True
                return False
            data = self._tail + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                self._tail = data
                continue
            self.block, self._tail, self.pos = data[:cut], data[cut:], 0
            return True

    def _raise(self, err, field, start, end) -> None:
        token = self.block[start:end][:40].decode("utf-8", "replace")
        what = _rowparse.ERRORS.get(err, f"error {err}")
        raise InputError(f"{self.source}: line {self.line + 1}, {self._field_name(field)}: "
                         f"{what} ({token!r})")

    def _field_name(self, field) -> str:
        return f"field {field + 1}"

    def _take(self, r):
        """Account for one parse call: lines, skipped lines, errors."""
        rows, pos, lines, skipped, err, fld, start, end = r
        if skipped:
            self.skipped.add(self.line + 1, self._skipped_at, skipped)
        self.line += lines
        self.pos = pos
        if err:
            self._raise(err, fld, start, end)
        return rows

    def close(self) -> None:
        self._fh.close()
        self._raw.close()


class LibSVMReader(_TextReader):
    """``label [qid:q] index:value ...`` lines; an absent index is ``fill`` (0.0 for LightGBM,
    missing for XGBoost, as each library reads such files). Columns to keep: ``label``,
    ``qid`` and ``row``; the query column is ``qid`` wherever ranking asks for one."""
    format = "libsvm"

    def __init__(self, path, n_features, fill, model_names, opts, gz: bool):
        super().__init__(path, n_features, fill, model_names, opts, gz)
        for spec in opts.keep:
            if spec not in ("label", "qid", ROW_COLUMN):
                raise InputError(f"{self.source}: a LibSVM file has the columns 'label', "
                                 f"'qid' and 'row' to keep, not {spec!r}")
        if opts.query_column not in (None, "qid"):
            raise InputError(f"{self.source}: a LibSVM file's query column is 'qid', not "
                             f"{opts.query_column!r}")

    def _field_name(self, field) -> str:
        return "the label" if field == 0 else f"token {field + 1}"

    def chunks(self) -> Iterator[Chunk]:
        cap = self.chunk_rows
        skip = self.opts.on_error == "skip"
        base = self.opts.index_base
        while True:
            X = np.empty((cap, self.n_features + base), np.float64)
            labels = np.empty(cap, np.float64)
            qids = np.empty(cap, np.int64)
            n = 0
            while n < cap:
                if self.pos >= len(self.block) and not self._next_block():
                    break
                r = _rowparse.parse_libsvm(self.block, self.pos, X, n, self.fill, labels,
                                           qids, skip, self._skipped_at)
                n += self._take(r)
            if n == 0:
                return
            cols = {}
            for spec in self.opts.keep:
                cols[spec] = {"label": labels, "qid": qids}.get(
                    spec, np.arange(self.rows, self.rows + n, dtype=np.int64))[:n]
            query = None
            if self.opts.query_column is not None:
                query = qids[:n]
                if (query < 0).any():
                    at = int(np.flatnonzero(query < 0)[0])
                    raise InputError(f"{self.source}: row {self.rows + at + 1} has no qid: "
                                     f"(ranking needs a query id on every line)")
            yield Chunk(np.ascontiguousarray(X[:n, base:]) if base else X[:n], self.rows, cols,
                        query, self._done())
            self.rows += n


class CSVReader(_TextReader):
    """Delimited numbers, with or without a header line of column names. An empty field or a
    missing-value word (``NA``, ``NaN``, ``null``, ...) is a missing value."""
    format = "csv"

    def __init__(self, path, n_features, fill, model_names, opts, gz: bool, sep: str):
        super().__init__(path, n_features, fill, model_names, opts, gz)
        self.format = "tsv" if sep == "\t" else "csv"
        self.sep = sep
        if not self._next_block():
            raise InputError(f"{self.source}: the file is empty")
        first_end = self.block.index(b"\n")
        first = self.block[:first_end].rstrip(b"\r").decode("utf-8", "replace")
        fields = [f.strip().strip('"') for f in first.split(sep)]
        if opts.header not in ("auto", "yes", "no"):
            raise InputError(f"header must be 'auto', 'yes' or 'no', got {opts.header!r}")
        header = opts.header == "yes" or (opts.header == "auto" and any(
            not _numeric_or_missing(f) for f in fields))
        self.names = fields if header else None
        if header:
            self.pos = first_end + 1
            self.line = 1
        self.n_cols = len(fields)
        self.cols = resolve_columns(self.names, self.n_cols, model_names, n_features, opts,
                                    self.source)
        target = np.full(self.n_cols, -1, np.int32)
        for j, f in enumerate(self.cols.feature_of):
            if f is not None:
                target[j] = f
        self._text = [(name, j) for name, j in self.cols.keep if j is not None]
        if self.cols.query is not None and all(j != self.cols.query for _, j in self._text):
            self._text.append((None, self.cols.query))
        # a categorical feature named by text (Ensemble.category_labels) is read as text and
        # turned into its category number after the numbers of its chunk
        labels = opts.category_labels or {}
        #: (file column, feature, its table of category numbers)
        self._categories = [(j, f, labels[f]) for j, f in enumerate(self.cols.feature_of)
                            if f is not None and f in labels]
        for j, _, _ in self._categories:
            if all(j != c for _, c in self._text):
                self._text.append((None, j))
        #: file column -> its place among the text columns
        self._text_of = {j: k for k, (_, j) in enumerate(self._text)}
        for j, k in self._text_of.items():
            target[j] = -3 - k
        self._target = target

    def _field_name(self, field) -> str:
        if self.names is not None and 0 <= field < len(self.names):
            return f"column {self.names[field]!r}"
        return f"column {field + 1}"

    def _raise(self, err, field, start, end) -> None:
        if err == 4:               # a different number of fields
            line = self.block[self.pos:self.block.index(b"\n", self.pos)]
            found = line.count(self.sep.encode()) + 1
            raise InputError(f"{self.source}: line {self.line + 1} has {found} fields, "
                             f"the first line {self.n_cols}")
        super()._raise(err, field, start, end)

    def chunks(self) -> Iterator[Chunk]:
        cap = self.chunk_rows
        skip = self.opts.on_error == "skip"
        n_text = len(self._text)
        while True:
            X = np.empty((cap, self.n_features), np.float64)
            labels = np.empty(cap, np.float64)
            offsets = np.empty((cap, n_text, 2), np.int64)
            texts = [[] for _ in range(n_text)]
            n = 0
            while n < cap:
                if self.pos >= len(self.block) and not self._next_block():
                    break
                r = _rowparse.parse_csv(self.block, self.pos, self.sep, self._target, X, n,
                                        labels, offsets, skip, self._skipped_at)
                got = r[0]
                for k in range(n_text):
                    texts[k].append(_slices(self.block, offsets[n:n + got, k]))
                n += self._take(r)
            if n == 0:
                return
            cols = {}
            text_cols = [np.concatenate(t) if t else np.zeros(0, "S1") for t in texts]
            for j, f, table in self._categories:
                X[:n, f] = _text_categories(text_cols[self._text_of[j]], table,
                                            self._field_name(j))
            for name, j in self.cols.keep:
                if j is None:
                    cols[name] = np.arange(self.rows, self.rows + n, dtype=np.int64)
                else:
                    cols[name] = text_cols[self._text_of[j]]
            query = None if self.cols.query is None else text_cols[self._text_of[self.cols.query]]
            yield Chunk(X[:n], self.rows, cols, query, self._done())
            self.rows += n


def _text_categories(values: np.ndarray, table: dict, column) -> np.ndarray:
    """A text file's fields of a categorical feature (bytes) as the model's category
    numbers: each field is its text (surrounding spaces and quotes removed), as CatBoost reads
    a categorical field of a file: an empty field is the empty text, and a text the model does
    not know is no category (-1)."""
    uniques, inverse = np.unique(values, return_inverse=True)
    numbers = np.empty(uniques.shape[0], np.float64)
    for k, raw in enumerate(uniques.tolist()):
        text = raw.decode("utf-8", "replace").strip().strip('"')
        numbers[k] = category_number(table, text, column)
    return numbers[inverse.ravel()]


#: a text file's fields that are missing values (and the empty field)
MISSING_WORDS = ("", "NA", "N/A", "NaN", "nan", "NAN", "null", "NULL", "None")


def _numeric_or_missing(field: str) -> bool:
    if field in MISSING_WORDS:
        return True
    try:
        float(field)
        return True
    except ValueError:
        return False


def _slices(buf: bytes, offsets: np.ndarray) -> np.ndarray:
    """The byte strings buf[start:end] for each (start, end) row, as one fixed-width array."""
    n = offsets.shape[0]
    if n == 0:
        return np.zeros(0, "S1")
    lengths = offsets[:, 1] - offsets[:, 0]
    width = max(1, int(lengths.max()))
    data = np.frombuffer(buf, np.uint8)
    idx = offsets[:, :1] + np.arange(width)
    mask = np.arange(width) < lengths[:, None]
    out = np.where(mask, data[np.minimum(idx, len(data) - 1)], 0).astype(np.uint8)
    out = out.view(f"S{width}").reshape(n)
    if b'""' in buf:                               # a doubled quote inside quotes
        out = np.array([s.replace(b'""', b'"') for s in out.tolist()], dtype=out.dtype)
    return out


class _ArrowReader(Reader):
    """Record batches of Parquet or Arrow IPC through pyarrow, columns by name."""

    def __init__(self, path, n_features, fill, model_names, opts, schema):
        super().__init__(path, n_features, fill, model_names, opts)
        import pyarrow as pa
        self._pa = pa
        names = list(schema.names)
        self.cols = resolve_columns(names, len(names), model_names, n_features, opts,
                                    self.source)
        labels = opts.category_labels or {}
        #: features read through the model's category texts
        self.texts = {f: labels[f] for f in self.cols.feature_of if f in labels}
        for j, f in enumerate(self.cols.feature_of):
            if f is None:
                continue
            t = schema.field(j).type
            if f in self.texts:
                if not (pa.types.is_dictionary(t) or pa.types.is_string(t)
                        or pa.types.is_large_string(t) or pa.types.is_integer(t)
                        or pa.types.is_floating(t) or pa.types.is_null(t)):
                    raise InputError(f"{self.source}: column {names[j]!r} has type {t}; a "
                                     f"categorical feature's column holds text or integers")
                continue
            if pa.types.is_dictionary(t):
                raise InputError(f"{self.source}: column {names[j]!r} is dictionary-encoded "
                                 f"(categorical strings); write the category codes the model "
                                 f"was trained on as integers")
            if not (pa.types.is_integer(t) or pa.types.is_floating(t)
                    or pa.types.is_boolean(t) or pa.types.is_decimal(t)
                    or pa.types.is_null(t)):
                raise InputError(f"{self.source}: column {names[j]!r} has type {t}, which is "
                                 f"not numeric")
        self.names = names
        used = opts.used
        if used is not None:
            self.cols.feature_of = [f if f is not None and used[f] else None
                                    for f in self.cols.feature_of]
        self._complete = sum(f is not None for f in self.cols.feature_of) == n_features
        self.wanted = sorted({j for j, f in enumerate(self.cols.feature_of) if f is not None}
                             | {j for _, j in self.cols.keep if j is not None}
                             | ({self.cols.query} if self.cols.query is not None else set()))

    def _chunk(self, batch, total: int | None) -> Chunk:
        """A record batch (of the wanted columns, in the file's order) as a Chunk."""
        pa = self._pa
        n = batch.num_rows
        X = np.empty((n, self.n_features), np.float64) if self._complete else\
            np.zeros((n, self.n_features), np.float64)      # features the model does not read
        by_name = {name: batch.column(i) for i, name in enumerate(batch.schema.names)}
        values, features = [], []
        for j, f in enumerate(self.cols.feature_of):
            if f is None:
                continue
            col = by_name[self.names[j]]
            if f in self.texts:
                values.append(_arrow_categories(pa, col, self.texts[f], self.names[j]))
                features.append(f)
                continue
            if col.type != pa.float64():
                col = col.cast(pa.float64())
            values.append(np.ascontiguousarray(col.to_numpy(zero_copy_only=False)))
            features.append(f)
        _rowparse.fill_columns(values, np.asarray(features, np.int64), X)
        cols = {}
        for name, j in self.cols.keep:
            cols[name] = (np.arange(self.rows, self.rows + n, dtype=np.int64) if j is None
                          else by_name[self.names[j]])
        query = None
        if self.cols.query is not None:
            q = by_name[self.names[self.cols.query]]
            query = q.to_numpy(zero_copy_only=False)
        done = (self.rows + n) / total if total else None
        chunk = Chunk(X, self.rows, cols, query, done)
        self.rows += n
        return chunk


def _arrow_categories(pa, col, table: dict[str, int], name: str) -> np.ndarray:
    """A column of category texts (or integers, integral floats, or a dictionary of these) as
    the model's category numbers: an unknown text names no category (-1), a missing value is
    NaN."""
    pc = _pyarrow("compute")
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if pa.types.is_floating(col.type):          # each distinct value's text, as a DataFrame's
        values = col.to_numpy(zero_copy_only=False)
        distinct, inverse = np.unique(values, return_inverse=True)
        lookup = np.array([category_number(table, v, name) for v in distinct.tolist()])
        return lookup[inverse.ravel()] if values.size else np.zeros(0)
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
        col = col.cast(pa.string())              # an integer's decimal digits, as CatBoost's
    keys = list(table)
    numbers = np.array([table[k] for k in keys] + [-1.0], np.float64)
    place = pc.index_in(col, value_set=pa.array(keys, pa.string())).fill_null(len(keys))
    out = numbers[np.asarray(place.to_numpy(zero_copy_only=False), np.int64)]
    out[np.asarray(col.is_null().to_numpy(zero_copy_only=False), bool)] = np.nan
    return out


def _pyarrow(module: str):
    """pyarrow or one of its modules, or an InputError saying how to install it."""
    import importlib
    try:
        return importlib.import_module(f"pyarrow.{module}" if module else "pyarrow")
    except ImportError:
        raise InputError("Parquet and Arrow files need pyarrow: pip install "
                         "'quickscorer[parquet]'") from None


class ParquetReader(_ArrowReader):
    format = "parquet"

    def __init__(self, path, n_features, fill, model_names, opts):
        pq = _pyarrow("parquet")
        try:
            self._file = pq.ParquetFile(str(path), memory_map=True)
        except Exception as exc:          # pyarrow raises its own error types
            raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
        super().__init__(path, n_features, fill, model_names, opts,
                         self._file.schema_arrow)

    def chunks(self) -> Iterator[Chunk]:
        meta = self._file.metadata
        total = meta.num_rows
        names = [self.names[j] for j in self.wanted]
        try:
            for g in range(meta.num_row_groups):
                if meta.row_group(g).total_byte_size <= ROW_GROUP_BYTES:
                    # a whole row group is read far faster than in batches, then sliced
                    table = self._file.read_row_group(g, columns=names, use_threads=False)
                    batches = (b for start in range(0, table.num_rows, self.chunk_rows)
                               for b in table.slice(start, self.chunk_rows).combine_chunks()
                               .to_batches())
                else:
                    batches = self._file.iter_batches(batch_size=self.chunk_rows,
                                                      row_groups=[g], columns=names,
                                                      use_threads=False)
                for batch in batches:
                    yield self._chunk(batch, total)
        except OSError as exc:
            raise InputError(f"{self.source}: cannot read past row {self.rows}: {exc}") from None

    def close(self) -> None:
        self._file.close()


class ArrowIPCReader(_ArrowReader):
    """Arrow IPC files (Feather v2) and streams, memory-mapped."""
    format = "arrow"

    def __init__(self, path, n_features, fill, model_names, opts):
        pa, ipc = _pyarrow(""), _pyarrow("ipc")
        self._source = pa.memory_map(str(path), "r")
        try:
            self._reader = ipc.open_file(self._source)
            self._stream = False
        except pa.ArrowInvalid:
            self._source.seek(0)
            try:
                self._reader = ipc.open_stream(self._source)
                self._stream = True
            except pa.ArrowInvalid as exc:
                self._source.close()
                raise InputError(f"{path}: not an Arrow IPC file or stream ({exc})") from None
        super().__init__(path, n_features, fill, model_names, opts, self._reader.schema)

    def chunks(self) -> Iterator[Chunk]:
        import pyarrow as pa
        wanted = [self.names[j] for j in self.wanted]
        if self._stream:
            batches = iter(self._reader)
            total = None
        else:
            batches = (self._reader.get_batch(i)
                       for i in range(self._reader.num_record_batches))
            total = sum(self._reader.get_batch(i).num_rows
                        for i in range(self._reader.num_record_batches))
        try:
            for batch in batches:
                batch = batch.select(wanted)
                for start in range(0, batch.num_rows, self.chunk_rows):
                    yield self._chunk(batch.slice(start, self.chunk_rows), total)
        except pa.ArrowInvalid as exc:
            raise InputError(f"{self.source}: cannot read past row {self.rows}: {exc}") from None

    def close(self) -> None:
        self._source.close()


class NpyReader(Reader):
    """A 2-D ``.npy`` array of numbers, memory-mapped (pages given back as chunks are read),
    or read in order when gzip-compressed. Columns to keep: ``row``."""
    format = "npy"

    def __init__(self, path, n_features, fill, model_names, opts, gz: bool):
        super().__init__(path, n_features, fill, model_names, opts)
        for spec in opts.keep:
            if spec != ROW_COLUMN:
                raise InputError(f"{self.source}: an .npy file has no named columns; only "
                                 f"'row' can be kept, not {spec!r}")
        for what in ("label_column", "query_column"):
            if getattr(opts, what) is not None:
                raise InputError(f"{self.source}: an .npy file holds features only; "
                                 f"{what.replace('_', '-')} does not apply")
        self._gz = gz
        self._raw = open(self.path, "rb")
        self._fh = gzip.GzipFile(fileobj=self._raw, mode="rb") if gz else self._raw
        try:
            version = np.lib.format.read_magic(self._fh)
            read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                           (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read_header is None:
                raise ValueError(f"format version {version} is not read here")
            shape, fortran, dtype = read_header(self._fh)
        except (ValueError, OSError, EOFError) as exc:
            raise InputError(f"{path}: not an .npy file ({exc})") from None
        if len(shape) != 2:
            raise InputError(f"{path}: the array has shape {shape}; rows to score are 2-D "
                             f"(rows x features)")
        if dtype.kind not in "biuf" or dtype.hasobject:
            raise InputError(f"{path}: the array's dtype {dtype} is not numeric")
        if shape[1] != n_features:
            raise InputError(f"{path}: the array has {shape[1]} columns; the model expects "
                             f"{n_features} features")
        self.shape, self.fortran, self.dtype = shape, fortran, dtype
        self.offset = self._fh.tell()
        self._mm = None
        if not gz and shape[0] * shape[1] > 0:
            self._mm = mmap.mmap(self._raw.fileno(), 0, access=mmap.ACCESS_READ)
            size = shape[0] * shape[1] * dtype.itemsize
            if self.offset + size > len(self._mm):
                raise InputError(f"{path}: the file is shorter than its header says "
                                 f"({len(self._mm) - self.offset} of {size} bytes)")
            self._array = np.frombuffer(self._mm, dtype, shape[0] * shape[1], self.offset
                                        ).reshape(shape, order="F" if fortran else "C")
        elif gz and fortran:
            raise InputError(f"{path}: a compressed Fortran-order array cannot be read in "
                             f"chunks; save it in C order")

    def chunks(self) -> Iterator[Chunk]:
        n_rows, n_cols = self.shape
        out_dtype = self.dtype if self.dtype in (np.float32, np.float64) else np.float64
        row_bytes = n_cols * self.dtype.itemsize
        for start in range(0, n_rows, self.chunk_rows):
            stop = min(n_rows, start + self.chunk_rows)
            if self._mm is not None:
                X = np.array(self._array[start:stop], dtype=out_dtype, order="C")
                if not self.fortran:                 # give back the pages just copied
                    lo = (self.offset + start * row_bytes) // mmap.PAGESIZE * mmap.PAGESIZE
                    hi = (self.offset + stop * row_bytes) // mmap.PAGESIZE * mmap.PAGESIZE
                    if hi > lo and hasattr(self._mm, "madvise"):
                        self._mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
            else:
                want = (stop - start) * row_bytes
                data = self._fh.read(want)
                if len(data) != want:
                    raise InputError(f"{self.source}: the data ends at row "
                                     f"{start + len(data) // max(1, row_bytes)} of {n_rows}")
                X = np.frombuffer(data, self.dtype).reshape(stop - start, n_cols).astype(
                    out_dtype, copy=False)
                if not X.flags.writeable:
                    X = X.copy()
            cols = {ROW_COLUMN: np.arange(start, stop, dtype=np.int64)} if self.opts.keep else {}
            yield Chunk(X, start, cols, None, stop / n_rows)
            self.rows = stop

    def close(self) -> None:
        if self._mm is not None:
            del self._array
            self._mm.close()
        self._fh.close()
        self._raw.close()


#: the suffix of the file beside a data file that LightGBM reads its query sizes from
#: (``rank.test`` and ``rank.test.query``)
QUERY_SUFFIX = ".query"


def query_file_for(path) -> Path | None:
    """The query file LightGBM finds beside the data file ``path`` (``path`` + ``.query``), or
    None where there is none."""
    q = Path(str(path) + QUERY_SUFFIX)
    return q if q.is_file() else None


def read_query_sizes(path) -> np.ndarray:
    """The rows of each query, in order, from a query file as LightGBM reads it: one integer a
    line (blank lines ignored). An InputError names the file and line of anything else."""
    sizes = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            text = line.strip()
            if not text:
                continue
            try:
                size = int(text)
            except ValueError:
                raise InputError(f"{path}: line {n} is not a number of rows: "
                                 f"{text[:40]!r}") from None
            if size < 0:
                raise InputError(f"{path}: line {n}: a query of {size} rows")
            sizes.append(size)
    return np.asarray(sizes, np.int64)


def open_input(path, n_features: int, fill: float, model_names=None,
               opts: ReadOptions | None = None, format: str | None = None) -> Reader:
    """A chunked reader of ``path`` for a model of ``n_features`` features.

    ``fill`` is the value of an entry a sparse (LibSVM) line leaves out: 0.0 for LightGBM,
    NaN (missing) for XGBoost, as the libraries read such files. ``format``: one of
    :data:`FORMATS`; by default from the suffix or the content.
    """
    opts = opts or ReadOptions()
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file")
    if p.is_dir():
        raise InputError(f"{path}: is a directory (score a directory of files with a Dask "
                         f"cluster: --dask or --scheduler)")
    found, gz = detect_format(p)
    fmt = format or found
    if fmt not in FORMATS:
        raise InputError(f"unknown input format {fmt!r}; one of {', '.join(FORMATS)}")
    if fmt in ("parquet", "arrow") and gz:
        raise InputError(f"{path}: a gzip-compressed {fmt} file cannot be read in chunks; "
                         f"Parquet compresses its own columns")
    if fmt == "libsvm":
        return LibSVMReader(p, n_features, fill, model_names, opts, gz)
    if fmt in ("csv", "tsv"):
        return CSVReader(p, n_features, fill, model_names, opts, gz,
                         "\t" if fmt == "tsv" else ",")
    if fmt == "parquet":
        return ParquetReader(p, n_features, fill, model_names, opts)
    if fmt == "arrow":
        return ArrowIPCReader(p, n_features, fill, model_names, opts)
    return NpyReader(p, n_features, fill, model_names, opts, gz)


def read_all(path, n_features: int, fill: float, model_names=None,
             opts: ReadOptions | None = None, format: str | None = None) -> np.ndarray:
    """Every row of a file in one array (what the chunks of :func:`open_input` hold)."""
    reader = open_input(path, n_features, fill, model_names, opts, format)
    try:
        parts = [c.X for c in reader.chunks()]
    finally:
        reader.close()
    if not parts:
        return np.zeros((0, n_features))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


__all__ = ["Chunk", "FORMATS", "QUERY_SUFFIX", "ReadOptions", "open_input", "query_file_for",
           "read_all", "read_query_sizes", "resolve_columns",
           "detect_format"]
