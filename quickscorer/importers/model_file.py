"""A model file's bytes for any importer: mapped read-only, size-checked, every failure a
:class:`ModelFormatError` naming the file."""
from __future__ import annotations

import mmap
from pathlib import Path

from ..errors import ModelFormatError

__all__ = ["MAX_MODEL_BYTES", "map_model_file"]

#: refuse to read model files larger than this (a corrupt size, not a model)
MAX_MODEL_BYTES = 4 << 30


def map_model_file(path: Path, what: str = "model file") -> bytes | mmap.mmap:
    """A model file's bytes, mapped read-only where the file is not empty: the tree parsers
    hand the pages back as they read them, so that a large model is never resident whole
    while it loads."""
    try:
        size = path.stat().st_size
        if size > MAX_MODEL_BYTES:
            raise ModelFormatError(f"{path}: {size} bytes is larger than any model we read")
        with open(path, "rb") as fh:
            if size == 0:
                return fh.read()
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:
        raise ModelFormatError(f"cannot read {what} {path}: {exc}") from None
