"""Writing results as they come: CSV/TSV, ``.npy`` and Parquet, all or nothing.

A writer takes tables (an ordered dict of equal-length columns: numpy arrays, or pyarrow arrays
carried from a Parquet or Arrow input) and writes them to a temporary file beside the output,
renamed over the output by :meth:`Writer.close`; :meth:`Writer.abort` removes it, so a failed
run leaves no half-written output. Standard output (``path=None``) is written as it comes.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from .errors import InputError
from .inputs import _rowparse

OUTPUT_FORMATS = ("csv", "tsv", "npy", "parquet")

#: values formatted into one text buffer at most (about 32 bytes each), so that a wide output
#: such as every tree's leaf stays a few megabytes at a time
TEXT_CELLS = 1 << 19

_SUFFIX = {".csv": "csv", ".tsv": "tsv", ".txt": "tsv", ".tab": "tsv", ".npy": "npy",
           ".parquet": "parquet", ".pq": "parquet"}


def output_format(path, format: str | None) -> str:
    """The format to write: ``format`` if given, else by the output's suffix (TSV by default,
    and on standard output)."""
    if format is not None:
        if format not in OUTPUT_FORMATS:
            raise InputError(f"unknown output format {format!r}; one of "
                             f"{', '.join(OUTPUT_FORMATS)}")
        return format
    if path is None:
        return "tsv"
    return _SUFFIX.get(Path(path).suffix.lower(), "tsv")


class Writer:
    """Base: the temporary file and its rename."""

    def __init__(self, path):
        self.path = None if path is None else Path(path)
        if self.path is not None:
            if self.path.is_dir():
                raise InputError(f"{path}: is a directory; name the output file")
            self.tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.partial")
        else:
            self.tmp = None
        self.rows = 0

    def write(self, table: dict) -> None:
        raise NotImplementedError

    def _finish(self) -> None:
        pass

    def close(self) -> None:
        """Finish the file and put it in place."""
        self._finish()
        if self.tmp is not None:
            os.replace(self.tmp, self.path)

    def abort(self) -> None:
        """Drop what was written (the output, if it existed before, is left as it was)."""
        try:
            self._drop()
        finally:
            if self.tmp is not None:
                try:
                    os.unlink(self.tmp)
                except FileNotFoundError:
                    pass

    def _drop(self) -> None:
        pass


def _text_column(col) -> np.ndarray:
    """A column as numbers or fixed-width bytes for the text formatter."""
    if isinstance(col, np.ndarray):
        if col.dtype.kind in "fiu" or col.dtype.kind == "S":
            return col
        if col.dtype.kind == "b":
            return col.astype(np.int64)
        return np.array([str(v).encode() for v in col.tolist()])
    import pyarrow as pa  # a column carried from Parquet / Arrow
    t = col.type
    if (pa.types.is_integer(t) or pa.types.is_floating(t)) and col.null_count == 0:
        return col.to_numpy(zero_copy_only=False)
    values = col.to_pylist()
    return np.array([b"" if v is None else (v if isinstance(v, bytes) else str(v).encode())
                     for v in values])


class TextWriter(Writer):
    """Delimited lines; a header line of column names where ``header`` is true, the values
    formatted ``cells`` at most at a time (TEXT_CELLS)."""

    def __init__(self, path, sep: str, header: bool, cells: int = TEXT_CELLS):
        super().__init__(path)
        self.sep = sep
        self.header = header
        self.cells = cells
        self._fh = open(self.tmp, "wb") if self.tmp is not None else sys.stdout.buffer

    def write(self, table: dict) -> None:
        if self.header:
            self._fh.write(self.sep.join(table).encode() + b"\n")
            self.header = False
        cols = [_text_column(c) for c in table.values()]
        n = len(cols[0])
        step = max(1, self.cells // len(cols))
        for start in range(0, n, step):
            self._fh.write(_rowparse.format_rows([c[start:start + step] for c in cols],
                                                 self.sep))
        self.rows += n

    def _finish(self) -> None:
        if self.tmp is not None:
            self._fh.close()
        else:
            self._fh.flush()

    def _drop(self) -> None:
        if self.tmp is not None:
            self._fh.close()


class NpyWriter(Writer):
    """One array of the score columns (1-D for one column), written as rows come: the header
    is written first with room for the final shape and rewritten at the end."""
    _HEADER = 128                    # bytes of the header, magic included (a multiple of 64)

    def __init__(self, path):
        super().__init__(path)
        if self.tmp is None:
            raise InputError("an .npy output needs a file name (-o FILE.npy)")
        self._fh = open(self.tmp, "wb")
        self._fh.write(b"\0" * self._HEADER)
        self.dtype = None
        self.width = None

    def write(self, table: dict) -> None:
        cols = list(table.values())
        dtypes = {np.asarray(c).dtype for c in cols}
        if any(not isinstance(c, np.ndarray) or c.dtype.kind not in "fiu" for c in cols):
            raise InputError("an .npy output holds numbers only (scores, ranks, leaves); "
                             "write kept columns to CSV or Parquet")
        dtype = np.result_type(*dtypes)
        if self.dtype is None:
            self.dtype, self.width = dtype, len(cols)
        block = np.column_stack(cols).astype(self.dtype, copy=False) if len(cols) > 1 else\
            cols[0].astype(self.dtype, copy=False)
        self._fh.write(np.ascontiguousarray(block).tobytes())
        self.rows += len(cols[0])

    def _finish(self) -> None:
        dtype = self.dtype if self.dtype is not None else np.dtype(np.float64)
        shape = (self.rows,) if (self.width or 1) == 1 else (self.rows, self.width)
        text = repr({"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False,
                     "shape": shape})
        room = self._HEADER - 10
        if len(text) + 1 > room:
            raise InputError("the .npy header does not fit")     # 118 characters hold any shape
        header = (text + " " * (room - len(text) - 1) + "\n").encode("latin1")
        self._fh.seek(0)
        self._fh.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
        self._fh.close()

    def _drop(self) -> None:
        self._fh.close()


class ParquetWriter(Writer):
    """Row groups as chunks come, through pyarrow."""

    def __init__(self, path):
        super().__init__(path)
        if self.tmp is None:
            raise InputError("a Parquet output needs a file name (-o FILE.parquet)")
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise InputError("writing Parquet needs pyarrow: pip install "
                             "'quickscorer[parquet]'") from None
        self._pa, self._pq = pa, pq
        self._writer = None
        self._schema = None

    def _array(self, col):
        pa = self._pa
        if isinstance(col, np.ndarray):
            if col.dtype.kind == "S":
                return pa.array(col.tolist(), pa.binary()).cast(pa.string())
            return pa.array(col)
        return col

    def write(self, table: dict) -> None:
        pa = self._pa
        batch = pa.table({name: self._array(c) for name, c in table.items()})
        if self._writer is None:
            self._schema = batch.schema
            self._writer = self._pq.ParquetWriter(str(self.tmp), self._schema)
        elif batch.schema != self._schema:
            batch = batch.cast(self._schema)
        self._writer.write_table(batch)
        self.rows += batch.num_rows

    def _finish(self) -> None:
        if self._writer is None:
            pa = self._pa
            self._pq.write_table(pa.table({"score": pa.array([], pa.float64())}), str(self.tmp))
        else:
            self._writer.close()

    def _drop(self) -> None:
        if self._writer is not None:
            self._writer.close()


def open_output(path, format: str | None = None, header: bool | None = None) -> Writer:
    """A writer for ``path`` (None: standard output) in ``format`` (by default from the suffix).
    ``header`` (text formats): a line of column names first; by default for ``.csv`` and
    ``.tsv`` files, not for standard output or ``.txt`` (a bare column of scores)."""
    fmt = output_format(path, format)
    if path is not None:
        parent = Path(path).parent
        if not parent.is_dir():
            raise InputError(f"{path}: the folder {parent} does not exist")
    if fmt in ("csv", "tsv"):
        return TextWriter(path, "," if fmt == "csv" else "\t",
                          header if header is not None
                          else path is not None and Path(path).suffix.lower() in (".csv", ".tsv"))
    if fmt == "npy":
        return NpyWriter(path)
    return ParquetWriter(path)
