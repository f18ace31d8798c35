"""A reader for the parts of an ONNX file that hold a tree ensemble, with no protobuf library.

An ONNX model is a protocol-buffers message (``onnx.proto``, proto2). This module decodes the
wire format (varints, 32/64-bit fixed fields, length-delimited fields; repeated numbers both
packed and one per tag) into plain Python values for ``ModelProto``, ``GraphProto``,
``NodeProto``, ``AttributeProto``, ``TensorProto`` and ``ValueInfoProto``, skipping every
other field. Field numbers are those of ``onnx.proto``. Every length and index is checked
against the bytes left, so a damaged file gives a :class:`ModelFormatError`, never a read
past the end.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import ModelFormatError

# wire types
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5

# AttributeProto.AttributeType
ATTR_FLOAT, ATTR_INT, ATTR_STRING, ATTR_TENSOR = 1, 2, 3, 4
ATTR_FLOATS, ATTR_INTS, ATTR_STRINGS = 6, 7, 8

# TensorProto.DataType: numpy dtype of each numeric element type read here
TENSOR_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16,
                 6: np.int32, 7: np.int64, 9: np.bool_, 11: np.float64, 12: np.uint32,
                 13: np.uint64}
ELEM_FLOAT, ELEM_DOUBLE = 1, 11


def _varint(buf: bytes, i: int, end: int) -> tuple[int, int]:
    x = shift = 0
    while True:
        if i >= end:
            raise ModelFormatError("ONNX: a number runs past the end of its field")
        c = buf[i]
        i += 1
        x |= (c & 0x7F) << shift
        if c < 0x80:
            return x, i
        shift += 7
        if shift > 63:
            raise ModelFormatError("ONNX: a number is longer than 10 bytes")


def _signed(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


def _field(buf: bytes, i: int, end: int) -> tuple[int, int, Any, int]:
    """The field at ``buf[i]``: ``(number, wire type, value, where the next one starts)``."""
    key, i = _varint(buf, i, end)
    num, wire = key >> 3, key & 7
    if num == 0:
        raise ModelFormatError("ONNX: a field numbered 0 (not a protocol-buffers message)")
    if wire == _VARINT:
        value, i = _varint(buf, i, end)
    elif wire == _BYTES:
        n, i = _varint(buf, i, end)
        if n > end - i:
            raise ModelFormatError(f"ONNX: field {num} holds {n} bytes, {end - i} are left")
        value = (i, i + n)
        i += n
    elif wire == _FIXED32:
        if i + 4 > end:
            raise ModelFormatError("ONNX: a 4-byte field runs past the end")
        value = int.from_bytes(buf[i:i + 4], "little")
        i += 4
    elif wire == _FIXED64:
        if i + 8 > end:
            raise ModelFormatError("ONNX: an 8-byte field runs past the end")
        value = int.from_bytes(buf[i:i + 8], "little")
        i += 8
    else:
        raise ModelFormatError(f"ONNX: field {num} has wire type {wire}, which no ONNX "
                               f"message uses (not an ONNX file, or a damaged one)")
    return num, wire, value, i


def fields(buf: bytes, start: int, end: int) -> Iterator[tuple[int, int, Any]]:
    """``(field number, wire type, value)`` of each field in ``buf[start:end]``: an int for a
    varint or fixed field, a ``(start, end)`` pair for a length-delimited one."""
    i = start
    while i < end:
        num, wire, value, i = _field(buf, i, end)
        yield num, wire, value


def _varint_run(buf: bytes, i: int, end: int, tag: int) -> tuple[np.ndarray, int]:
    """The values of consecutive one-byte-tag varint fields ``tag`` from ``buf[i]`` (a
    repeated number written one per tag, as proto2 writes ``ints``), decoded at once, and
    where the run ends."""
    seg = np.frombuffer(buf, np.uint8, end - i, i)
    last = np.flatnonzero(seg < 0x80)            # the last byte of every varint
    if last.size < 2:
        return np.zeros(0, np.int64), i
    first = np.concatenate(([0], last[:-1] + 1))
    length = last - first + 1
    pairs = last.size // 2
    tags_ok = (length[0:2 * pairs:2] == 1) & (seg[first[0:2 * pairs:2]] == tag)
    bad = np.flatnonzero(~tags_ok)
    n = int(bad[0]) if bad.size else pairs
    if n == 0:
        return np.zeros(0, np.int64), i
    vf, vl = first[1:2 * n:2], length[1:2 * n:2]
    if int(vl.max()) > 10:
        raise ModelFormatError("ONNX: a number is longer than 10 bytes")
    value = np.zeros(n, np.uint64)
    for j in range(int(vl.max())):
        take = vl > j
        value[take] |= (seg[vf[take] + j].astype(np.uint64) & np.uint64(0x7F)) << np.uint64(7 * j)
    return value.view(np.int64), i + int(last[2 * n - 1]) + 1


def _fixed32_run(buf: bytes, i: int, end: int, tag: int) -> tuple[np.ndarray, int]:
    """The float32 values of consecutive one-byte-tag fixed32 fields ``tag`` from ``buf[i]``
    (a repeated float written one per tag), and where the run ends."""
    n = (end - i) // 5
    seg = np.frombuffer(buf, np.uint8, 5 * n, i).reshape(n, 5)
    bad = np.flatnonzero(seg[:, 0] != tag)
    n = int(bad[0]) if bad.size else n
    return seg[:n, 1:].copy().view("<f4").ravel().astype(np.float32), i + 5 * n


class _Repeated:
    """Collects one repeated number field, given one per tag or packed, in order."""

    def __init__(self, kind: str):
        self.kind = kind            # "varint", "f32", "f64"
        self.items: list = []
        self.parts: list[np.ndarray] = []

    def _flush(self) -> None:
        if self.items:
            if self.kind == "varint":
                self.parts.append(np.asarray([_signed(x) for x in self.items], np.int64))
            elif self.kind == "f32":
                self.parts.append(np.asarray(self.items, np.uint32).view(np.float32))
            else:
                self.parts.append(np.asarray(self.items, np.uint64).view(np.float64))
            self.items = []

    def extend(self, values: np.ndarray) -> None:
        self._flush()
        self.parts.append(values)

    def add(self, buf: bytes, wire: int, value) -> None:
        if wire == _BYTES:                           # packed
            s, e = value
            if self.kind == "f32":
                if (e - s) % 4:
                    raise ModelFormatError("ONNX: packed floats are not whole 4-byte values")
                self.extend(np.frombuffer(buf, "<f4", (e - s) // 4, s).astype(np.float32))
            elif self.kind == "f64":
                if (e - s) % 8:
                    raise ModelFormatError("ONNX: packed doubles are not whole 8-byte values")
                self.extend(np.frombuffer(buf, "<f8", (e - s) // 8, s).astype(np.float64))
            else:
                i = s
                out = []
                while i < e:
                    x, i = _varint(buf, i, e)
                    out.append(_signed(x))
                self.extend(np.asarray(out, np.int64))
        elif (self.kind == "varint" and wire == _VARINT or self.kind == "f32" and
              wire == _FIXED32 or self.kind == "f64" and wire == _FIXED64):
            self.items.append(value)
        else:
            raise ModelFormatError(f"ONNX: a repeated {self.kind} field has wire type {wire}")

    def empty(self) -> bool:
        return not self.items and not self.parts

    def array(self) -> np.ndarray:
        self._flush()
        dtype = {"varint": np.int64, "f32": np.float32, "f64": np.float64}[self.kind]
        if not self.parts:
            return np.zeros(0, dtype)
        return self.parts[0] if len(self.parts) == 1 else np.concatenate(self.parts)


def _text(buf: bytes, span) -> str:
    return bytes(buf[span[0]:span[1]]).decode("utf-8", "replace")


def tensor(buf: bytes, s: int, e: int) -> np.ndarray:
    """A ``TensorProto``'s numbers as an array of its dims (numeric element types only)."""
    # dims, float_data, int32_data, int64_data, double_data, uint64_data
    numbers = {1: _Repeated("varint"), 4: _Repeated("f32"), 5: _Repeated("varint"),
               7: _Repeated("varint"), 10: _Repeated("f64"), 11: _Repeated("varint")}
    dtype_code = 0
    raw = None
    name = ""
    for num, wire, v in fields(buf, s, e):
        if num in numbers:
            numbers[num].add(buf, wire, v)
        elif num == 2 and wire == _VARINT:
            dtype_code = v
        elif num == 8 and wire == _BYTES:
            name = _text(buf, v)
        elif num == 9 and wire == _BYTES:
            raw = v
        elif num == 14 and wire == _VARINT and v == 1:
            raise ModelFormatError(f"ONNX: tensor {name!r} is stored in an external file; save "
                                   f"the model with its data inside (onnx.save_model(..., "
                                   f"save_as_external_data=False))")
    if dtype_code not in TENSOR_DTYPES:
        raise ModelFormatError(f"ONNX: tensor {name!r} has element type {dtype_code}, not a "
                               f"number type read here")
    dtype = np.dtype(TENSOR_DTYPES[dtype_code])
    shape = tuple(int(d) for d in numbers[1].array())
    if any(d < 0 for d in shape):
        raise ModelFormatError(f"ONNX: tensor {name!r} has a negative dimension")
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if raw is not None:
        n = raw[1] - raw[0]
        if n != count * dtype.itemsize:
            raise ModelFormatError(f"ONNX: tensor {name!r} holds {n} bytes for {count} values "
                                   f"of {dtype.itemsize}")
        data = np.frombuffer(buf, dtype.newbyteorder("<"), count, raw[0]).astype(dtype)
    else:       # the field each element type is written in without raw_data
        field = {1: 4, 11: 10, 7: 7, 12: 11, 13: 11}.get(dtype_code, 5)
        data = numbers[field].array().astype(dtype)
    if data.size != count:
        raise ModelFormatError(f"ONNX: tensor {name!r} holds {data.size} values for its shape "
                               f"{shape}")
    return data.reshape(shape)


def attribute(buf: bytes, s: int, e: int) -> tuple[str, Any]:
    """``(name, value)`` of an ``AttributeProto``: a float, an int, bytes, an array (tensors,
    floats, ints) or a list of bytes (strings)."""
    name, kind = "", 0
    f = i = s_ = t = None
    floats, ints = _Repeated("f32"), _Repeated("varint")
    strings: list[bytes] = []
    at = s
    window = 1 << 16
    runs = True            # decode runs at once until one ends (then field by field, so
    while at < e:          # that a damaged attribute costs linear time)
        num, wire, v, nxt = _field(buf, at, e)
        if runs and (num, wire) in ((7, _FIXED32), (8, _VARINT)):
            stop = min(e, at + window)             # each scan reads a window of bytes
            run, end_run = (_fixed32_run(buf, at, stop, 0x3D) if num == 7
                            else _varint_run(buf, at, stop, 0x40))
            if run.size:
                (floats if num == 7 else ints).extend(run)
                # a run cut by the window goes on in the next one; one that ends before it
                # (another field follows) was the whole run
                runs = stop < e and stop - end_run < 16
                at = end_run
                continue
            runs = False
        at = nxt
        if num == 1 and wire == _BYTES:
            name = _text(buf, v)
        elif num == 20 and wire == _VARINT:
            kind = v
        elif num == 2 and wire == _FIXED32:
            f = float(np.uint32(v).view(np.float32))
        elif num == 3 and wire == _VARINT:
            i = _signed(v)
        elif num == 4 and wire == _BYTES:
            s_ = bytes(buf[v[0]:v[1]])
        elif num == 5 and wire == _BYTES:
            t = v
        elif num == 7:
            floats.add(buf, wire, v)
        elif num == 8:
            ints.add(buf, wire, v)
        elif num == 9 and wire == _BYTES:
            strings.append(bytes(buf[v[0]:v[1]]))
    if kind == 0:          # IR version 1 files carry no type: the field present decides
        kind = (ATTR_FLOAT if f is not None else ATTR_INT if i is not None else
                ATTR_STRING if s_ is not None else ATTR_TENSOR if t is not None else
                ATTR_FLOATS if not floats.empty() else
                ATTR_INTS if not ints.empty() else ATTR_STRINGS)
    if kind == ATTR_FLOAT:
        return name, 0.0 if f is None else f
    if kind == ATTR_INT:
        return name, 0 if i is None else i
    if kind == ATTR_STRING:
        return name, b"" if s_ is None else s_
    if kind == ATTR_TENSOR:
        if t is None:
            raise ModelFormatError(f"ONNX: attribute {name!r} holds no tensor")
        return name, tensor(buf, *t)
    if kind == ATTR_FLOATS:
        return name, floats.array()
    if kind == ATTR_INTS:
        return name, ints.array()
    if kind == ATTR_STRINGS:
        return name, strings
    return name, None      # graphs, sparse tensors, types: no tree ensemble uses them


def node(buf: bytes, s: int, e: int) -> dict:
    out: dict = {"input": [], "output": [], "name": "", "op_type": "", "domain": "",
                 "attributes": {}}
    for num, wire, v in fields(buf, s, e):
        if wire != _BYTES:
            continue
        if num == 1:
            out["input"].append(_text(buf, v))
        elif num == 2:
            out["output"].append(_text(buf, v))
        elif num == 3:
            out["name"] = _text(buf, v)
        elif num == 4:
            out["op_type"] = _text(buf, v)
        elif num == 7:
            out["domain"] = _text(buf, v)
        elif num == 5:
            key, value = attribute(buf, *v)
            out["attributes"][key] = value
    return out


def value_info(buf: bytes, s: int, e: int) -> dict:
    """``{"name", "elem_type", "shape"}`` of a ``ValueInfoProto`` (elem_type 0 and shape None
    where it is not a tensor; a dimension without a value is None)."""
    out: dict = {"name": "", "elem_type": 0, "shape": None}
    for num, wire, v in fields(buf, s, e):
        if num == 1 and wire == _BYTES:
            out["name"] = _text(buf, v)
        elif num == 2 and wire == _BYTES:
            for tnum, twire, tv in fields(buf, *v):
                if tnum != 1 or twire != _BYTES:      # TypeProto.tensor_type
                    continue
                for n2, w2, v2 in fields(buf, *tv):
                    if n2 == 1 and w2 == _VARINT:
                        out["elem_type"] = v2
                    elif n2 == 2 and w2 == _BYTES:       # TensorShapeProto
                        dims = []
                        for n3, w3, v3 in fields(buf, *v2):
                            if n3 != 1 or w3 != _BYTES:
                                continue
                            dim = None
                            for n4, w4, v4 in fields(buf, *v3):
                                if n4 == 1 and w4 == _VARINT:
                                    dim = _signed(v4)
                            dims.append(dim)
                        out["shape"] = dims
    return out


def graph(buf: bytes, s: int, e: int) -> dict:
    out: dict = {"name": "", "nodes": [], "inputs": [], "outputs": [], "initializers": {}}
    for num, wire, v in fields(buf, s, e):
        if wire != _BYTES:
            continue
        if num == 1:
            out["nodes"].append(node(buf, *v))
        elif num == 2:
            out["name"] = _text(buf, v)
        elif num == 5:
            init_name = ""
            for n2, w2, v2 in fields(buf, *v):
                if n2 == 8 and w2 == _BYTES:
                    init_name = _text(buf, v2)
            out["initializers"][init_name] = v            # decoded when asked for
        elif num == 11:
            out["inputs"].append(value_info(buf, *v))
        elif num == 12:
            out["outputs"].append(value_info(buf, *v))
    return out


def model(buf: bytes) -> dict:
    """The parts of a ``ModelProto`` a tree ensemble needs: ``ir_version``, ``producer_name``,
    ``producer_version``, ``opsets`` (domain to version), ``graph`` (its initializers as
    byte spans of ``buffer``, read with :func:`tensor`) and ``buffer``."""
    out: dict = {"ir_version": 0, "producer_name": "", "producer_version": "", "opsets": {},
                 "graph": None, "buffer": buf}
    for num, wire, v in fields(buf, 0, len(buf)):
        if num == 1 and wire == _VARINT:
            out["ir_version"] = v
        elif num == 2 and wire == _BYTES:
            out["producer_name"] = _text(buf, v)
        elif num == 3 and wire == _BYTES:
            out["producer_version"] = _text(buf, v)
        elif num == 8 and wire == _BYTES:
            domain, version = "", 0
            for n2, w2, v2 in fields(buf, *v):
                if n2 == 1 and w2 == _BYTES:
                    domain = _text(buf, v2)
                elif n2 == 2 and w2 == _VARINT:
                    version = v2
            out["opsets"][domain] = version
        elif num == 7 and wire == _BYTES:
            out["graph"] = graph(buf, *v)
    if out["graph"] is None:
        raise ModelFormatError("ONNX: the model has no graph")
    return out


def looks_like_model(buf: bytes) -> bool:
    """Whether ``buf`` reads as a ``ModelProto`` at its top level with an IR version and a
    graph (the nested messages are not decoded: cheap)."""
    if len(buf) < 4 or buf[0] != 0x08:          # field 1 (ir_version), a varint, comes first
        return False
    seen = set()
    try:
        for num, _wire, _ in fields(buf, 0, len(buf)):
            if num not in (1, 2, 3, 4, 5, 6, 7, 8, 14, 20, 25, 26):
                return False
            seen.add(num)
    except ModelFormatError:
        return False
    return 1 in seen and 7 in seen
