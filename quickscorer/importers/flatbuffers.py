"""A reader for FlatBuffers tables, with no flatbuffers library: what CatBoost's ``.cbm`` file
needs (tables, scalars, strings, vectors of scalars, structs and tables).

The format (flatbuffers.dev, "Internals"): little-endian throughout. The buffer starts with a
``uoffset`` (uint32) to the root table. A table starts with an ``soffset`` (int32): its vtable
is at the table's position minus that value. A vtable is ``uint16`` words: its own size in
bytes, the table's size, then one offset per field from the table's start (0: the field is
absent and has its default). A field that is a table, string or vector holds a ``uoffset``
relative to the field's own position; a vector (and a string) starts with a uint32 element
count, then the elements (a string's bytes are followed by a NUL). Every position here is
checked against the buffer, so a damaged file gives a :class:`ModelFormatError` naming what
it was reading, never a read past the end.
"""
from __future__ import annotations

import struct

import numpy as np

from ..errors import ModelFormatError


class Table:
    """One table of a buffer: its fields by slot number (the field's place in the schema)."""

    __slots__ = ("buf", "pos", "vt", "n_slots", "what")

    def __init__(self, buf: bytes, pos: int, what: str):
        self.buf, self.what = buf, what
        _need(buf, pos, 4, what)
        vt = pos - struct.unpack_from("<i", buf, pos)[0]
        _need(buf, vt, 4, f"{what}'s field table")
        vt_size, _ = struct.unpack_from("<HH", buf, vt)
        if vt_size < 4 or vt_size % 2:
            raise ModelFormatError(f"{what}: a field table of {vt_size} bytes")
        _need(buf, vt, vt_size, f"{what}'s field table")
        self.pos, self.vt, self.n_slots = pos, vt, (vt_size - 4) // 2

    def _field(self, slot: int) -> int:
        """The field's position in the buffer, 0 where it is absent."""
        if slot >= self.n_slots:
            return 0
        off = struct.unpack_from("<H", self.buf, self.vt + 4 + 2 * slot)[0]
        return self.pos + off if off else 0

    def refuse_unknown_slots(self, n_known: int, writer: str) -> None:
        """Raise ModelFormatError where the table holds a field at slot ``n_known`` or later:
        one the reader's schema does not have, which may change what the table means."""
        for slot in range(n_known, self.n_slots):
            if self._field(slot):
                raise ModelFormatError(
                    f"{self.what} (written by {writer}) holds field {slot}, which this "
                    f"reader's schema does not have, and it may change the scores; refusing "
                    f"the model rather than reading it as if the field were absent")

    def scalar(self, slot: int, fmt: str, default):
        """A number (``struct`` format ``fmt``) or its default where absent."""
        p = self._field(slot)
        if not p:
            return default
        _need(self.buf, p, struct.calcsize(fmt), f"{self.what}: field {slot}")
        return struct.unpack_from("<" + fmt, self.buf, p)[0]

    def _target(self, slot: int) -> int:
        p = self._field(slot)
        if not p:
            return 0
        _need(self.buf, p, 4, f"{self.what}: field {slot}")
        return p + struct.unpack_from("<I", self.buf, p)[0]

    def table(self, slot: int, what: str) -> Table | None:
        t = self._target(slot)
        return Table(self.buf, t, what) if t else None

    def string(self, slot: int) -> str | None:
        t = self._target(slot)
        return _string(self.buf, t, f"{self.what}: field {slot}") if t else None

    def _vector(self, slot: int, item: int) -> tuple[int, int]:
        """(position of the first element, element count) of a vector field; (0, 0) absent."""
        t = self._target(slot)
        if not t:
            return 0, 0
        _need(self.buf, t, 4, f"{self.what}: field {slot}")
        n = struct.unpack_from("<I", self.buf, t)[0]
        _need(self.buf, t + 4, n * item, f"{self.what}: field {slot}'s {n} elements")
        return t + 4, n

    def array(self, slot: int, dtype) -> np.ndarray:
        """A vector of numbers or of structs (a structured ``dtype``), copied; empty absent."""
        dt = np.dtype(dtype).newbyteorder("<")
        start, n = self._vector(slot, dt.itemsize)
        return np.frombuffer(self.buf, dt, n, start).copy() if n else np.zeros(0, dt)

    def strings(self, slot: int) -> list[str]:
        start, n = self._vector(slot, 4)
        return [_string(self.buf, p + struct.unpack_from("<I", self.buf, p)[0],
                        f"{self.what}: string {i} of field {slot}")
                for i, p in enumerate(range(start, start + 4 * n, 4))]

    def tables(self, slot: int, what: str) -> list[Table]:
        start, n = self._vector(slot, 4)
        return [Table(self.buf, p + struct.unpack_from("<I", self.buf, p)[0], f"{what} {i}")
                for i, p in enumerate(range(start, start + 4 * n, 4))]


def root(buf: bytes, what: str) -> Table:
    """The root table of a FlatBuffers buffer."""
    _need(buf, 0, 4, what)
    return Table(buf, struct.unpack_from("<I", buf, 0)[0], what)


def _need(buf: bytes, pos: int, size: int, what: str) -> None:
    if pos < 0 or size < 0 or pos + size > len(buf):
        raise ModelFormatError(f"{what} runs past the end of the buffer (damaged or truncated)")


def _string(buf: bytes, pos: int, what: str) -> str:
    _need(buf, pos, 4, what)
    n = struct.unpack_from("<I", buf, pos)[0]
    _need(buf, pos + 4, n, what)
    try:
        return bytes(buf[pos + 4:pos + 4 + n]).decode("utf-8")
    except UnicodeDecodeError:
        raise ModelFormatError(f"{what} is not UTF-8 text") from None
