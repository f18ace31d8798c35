"""What a caller passes, turned into rows a kernel reads, or a clear :class:`InputError`.

- ``arrays.py``: numpy arrays of any real dtype and order, single rows, pandas DataFrames
  (matched by feature name, categories by code) and scipy sparse matrices;
- ``files.py``: data files for the command line (LibSVM, CSV/TSV, ``.npy``).
"""
from .arrays import as_rows
from .files import read_libsvm, read_rows

__all__ = ["as_rows", "read_libsvm", "read_rows"]
