"""What a caller passes, turned into rows a kernel reads, or a clear :class:`InputError`.

- ``arrays``: numpy arrays of any real dtype and order, single rows, pandas DataFrames
  (matched by feature name, categories by code) and scipy sparse matrices;
- ``readers``: data files in chunks (LibSVM, CSV/TSV, Parquet, Arrow, ``.npy``, gzip);
- ``_rowparse``: LibSVM and CSV/TSV lines into rows in C, the GIL released (``row_parse.h``),
  scores as text, and a request's list of numbers for the MLServer runtime;
- ``chunks``: what the readers share: chunk sizes, options, columns matched to features;
- ``files``: a whole data file in memory, for the command line.
"""
from .arrays import as_rows
from .files import read_libsvm, read_rows

__all__ = ["as_rows", "read_libsvm", "read_rows"]
