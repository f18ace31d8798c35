"""A small, strict UBJSON decoder for the models XGBoost writes (``save_raw("ubj")``, ``.ubj``).

UBJSON (https://ubjson.org, draft 12) is JSON with typed, big-endian binary values. XGBoost
uses strings, objects, plain arrays and "optimized" arrays (``[$<type>#<count>``) of float32,
int32, int64 and uint8. Optimized numeric arrays decode into numpy arrays in one step; every
count and length is checked against the bytes that are left, so a damaged file fails fast with
a :class:`ModelFormatError` instead of allocating gigabytes or recursing without end.
"""
from __future__ import annotations

import struct

import numpy as np

from ..errors import ModelFormatError

__all__ = ["decode_ubjson", "MAX_DEPTH"]

#: containers nested deeper than this are refused (an XGBoost model nests about 8 deep)
MAX_DEPTH = 64

# marker -> (struct format, size) of the fixed-size numeric types
_NUMBERS = {
    b"i": (">b", 1),
    b"U": (">B", 1),
    b"I": (">h", 2),
    b"l": (">i", 4),
    b"L": (">q", 8),
    b"d": (">f", 4),
    b"D": (">d", 8),
}
# marker -> numpy dtype, for optimized arrays
_NUMPY = {
    b"i": np.dtype(">i1"),
    b"U": np.dtype(">u1"),
    b"I": np.dtype(">i2"),
    b"l": np.dtype(">i4"),
    b"L": np.dtype(">i8"),
    b"d": np.dtype(">f4"),
    b"D": np.dtype(">f8"),
}
# native dtype each decoded numeric array gets
_NATIVE = {
    b"i": np.int8, b"U": np.uint8, b"I": np.int16, b"l": np.int32, b"L": np.int64,
    b"d": np.float32, b"D": np.float64,
}
_CONSTANTS = {b"Z": None, b"T": True, b"F": False}


class _Reader:
    __slots__ = ("buf", "pos", "end")

    def __init__(self, data: bytes):
        self.buf = memoryview(data)
        self.pos = 0
        self.end = len(data)

    def fail(self, what: str):
        raise ModelFormatError(f"UBJSON: {what} at byte {self.pos}")

    def take(self, n: int) -> memoryview:
        if n < 0 or n > self.end - self.pos:
            self.fail(f"needs {n} more bytes, {self.end - self.pos} left (truncated data)")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def marker(self) -> bytes:
        m = bytes(self.take(1))
        while m == b"N":            # no-op markers may appear anywhere a value may
            m = bytes(self.take(1))
        return m

    def number(self, m: bytes):
        fmt, size = _NUMBERS[m]
        return struct.unpack(fmt, self.take(size))[0]

    def count(self, what: str) -> int:
        m = self.marker()
        if m not in (b"i", b"U", b"I", b"l", b"L"):
            self.fail(f"{what} must be an integer, found marker {m!r}")
        n = self.number(m)
        if n < 0:
            self.fail(f"negative {what} {n}")
        return n

    def string_body(self) -> str:
        n = self.count("string length")
        raw = self.take(n)
        try:
            return str(raw, "utf-8")
        except UnicodeDecodeError:
            self.fail("a string is not valid UTF-8")

    def value(self, m: bytes, depth: int):
        if m in _NUMBERS:
            return self.number(m)
        if m == b"S":
            return self.string_body()
        if m in _CONSTANTS:
            return _CONSTANTS[m]
        if m == b"C":
            return chr(self.take(1)[0])
        if m == b"H":
            text = self.string_body()
            try:
                return float(text)
            except ValueError:
                self.fail(f"high-precision number {text[:20]!r} does not parse")
        if m == b"[":
            return self.array(depth + 1)
        if m == b"{":
            return self.obj(depth + 1)
        self.fail(f"unknown marker {m!r}")

    def container_header(self):
        """Optional ``$type`` and ``#count`` after an opening bracket."""
        typ = None
        cnt = None
        if self.pos < self.end and self.buf[self.pos] == ord("$"):
            self.pos += 1
            typ = bytes(self.take(1))
            if typ not in _NUMBERS and typ not in (b"S", b"C", b"Z", b"T", b"F", b"[", b"{"):
                self.fail(f"unknown container type {typ!r}")
            if self.pos >= self.end or self.buf[self.pos] != ord("#"):
                self.fail("a typed container needs a count")
        if self.pos < self.end and self.buf[self.pos] == ord("#"):
            self.pos += 1
            cnt = self.count("container count")
            # each element takes at least one byte, unless its type carries no payload
            min_size = _NUMBERS[typ][1] if typ in _NUMBERS else (0 if typ in _CONSTANTS else 1)
            if min_size and cnt > (self.end - self.pos) // min_size:
                self.fail(f"container count {cnt} is larger than the data left")
            if min_size == 0 and cnt > (1 << 24):
                self.fail(f"container count {cnt} is absurd")
        return typ, cnt

    def array(self, depth: int):
        if depth > MAX_DEPTH:
            self.fail(f"containers nested deeper than {MAX_DEPTH}")
        typ, cnt = self.container_header()
        if typ in _NUMPY:
            size = _NUMPY[typ].itemsize * cnt
            raw = self.take(size)
            return np.frombuffer(raw, dtype=_NUMPY[typ], count=cnt).astype(_NATIVE[typ])
        out = []
        if cnt is not None:
            for _ in range(cnt):
                out.append(self.value(typ if typ is not None else self.marker(), depth))
            return out
        while True:
            m = self.marker()
            if m == b"]":
                return out
            out.append(self.value(m, depth))

    def obj(self, depth: int):
        if depth > MAX_DEPTH:
            self.fail(f"containers nested deeper than {MAX_DEPTH}")
        typ, cnt = self.container_header()
        out = {}
        if cnt is not None:
            for _ in range(cnt):
                key = self.string_body()
                out[key] = self.value(typ if typ is not None else self.marker(), depth)
            return out
        while True:
            if self.pos < self.end and self.buf[self.pos] == ord("}"):
                self.pos += 1
                return out
            while self.pos < self.end and self.buf[self.pos] == ord("N"):
                self.pos += 1
            key = self.string_body()
            out[key] = self.value(self.marker(), depth)


def decode_ubjson(data: bytes):
    """Decode one UBJSON value (XGBoost writes one object) from ``data``.

    Numeric optimized arrays become numpy arrays (native byte order); other arrays become
    lists, objects dicts. Raises :class:`ModelFormatError` on truncated or malformed data and
    on trailing bytes after the value.
    """
    r = _Reader(bytes(data))
    out = r.value(r.marker(), 0)
    while r.pos < r.end and r.buf[r.pos] == ord("N"):
        r.pos += 1
    if r.pos != r.end:
        r.fail(f"{r.end - r.pos} trailing bytes after the value")
    return out
