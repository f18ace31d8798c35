"""The prepared model file (``.qsm``): a model's trees and every layout its automatic choice
runs, written once (``quickscorer compile``, :meth:`Model.save`) and memory-mapped by every
process that scores it (``quickscorer.load``).

The container (``src/quickscorer/qsm.h``): a header, 64-byte aligned sections and a table of
them, each checksummed. Section 0 is a JSON description: the name, dtype and shape of every
other section (each one numpy array), the ensemble's fields, and the prepared results
(:mod:`quickscorer.prepared`) by key. Opening checks the container, then the trees as
:func:`~quickscorer.ir.ensemble.check_packed` does, then each layout as its kernel's
constructor does when a call first needs it; a result whose key the running quickscorer
would not compute (another CPU's cache size, another tuning) is computed instead. The layouts
are taken from a file that this release of quickscorer wrote (``LAYOUTS_REVISION``); a file
from another release is opened from its trees, its layouts rebuilt. docs/model-file.md.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import mmap
import operator
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from . import _qsm, prepared
from ._transforms import TRANSFORM_CODES
from ._version import __version__
from .algorithms import cpu
from .algorithms.forest import FAMILY_CODE, forest_arrays
from .algorithms.rapidscorer import _rapidscorer
from .algorithms.traversal import node_arrays
from .errors import ModelFileError, ModelFormatError
from .ir.ensemble import Ensemble, PackedTrees, check_packed

SUFFIX = ".qsm"
#: the container's format version (qsm.h QSM_VERSION): a file of a newer one is refused
FORMAT_VERSION = _qsm.VERSION
#: raised with any change to what a recorded layout holds, so that a file written before it
#: is opened from its trees instead
LAYOUTS_REVISION = 3
#: arrays of at least this many bytes are written once where another holds the same bytes
_SHARED_MIN_BYTES = 4096
#: the array types a section may hold (little-endian, as every integer of the file)
DTYPES = ("|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f4", "<f8")
#: row counts of the calls a compile makes, so that every layout the automatic choice builds
#: on a call's first need of it (tree blocks, the widest groups) is built and written
WARM_ROWS = (1, 2, 3, 4, 5, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)


def looks_like_qsm(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) starts a prepared model file."""
    head = bytes(head[:8])
    # a file cut inside the magic number is a truncated prepared model file
    return head == _qsm.MAGIC or (len(head) >= 4 and _qsm.MAGIC.startswith(head))


# -- values as JSON, their arrays as sections -----------------------------------------------
class _Encoder:
    """A value as JSON, each numpy array replaced by ``{"$a": section}`` and kept in
    ``arrays``; tuples as ``{"$t": [...]}``, dicts with keys that are not plain strings as
    ``{"$m": [[key, value], ...]}``."""

    def __init__(self):
        self.arrays: list[tuple[str, np.ndarray]] = []
        #: the section of each array written, by its memory (kept alive in ``arrays``), so
        #: that the trees' arrays the C index names again are written once
        self._sections: dict[tuple, int] = {}
        #: and by its bytes, so that two equal arrays (a model's missing types and its
        #: categorical flags, both all zeros) are one section: fewer pages to check and map
        self._contents: dict[tuple, int] = {}

    def section(self, v: np.ndarray, name: str) -> int:
        """The section of array ``v``: a new one, or the one of an array written before that
        is the same memory, or holds the same bytes, of the same type and shape (the
        description names a section by its first array's name)."""
        a = np.ascontiguousarray(v)
        if a.dtype.byteorder == ">" or (a.dtype.byteorder == "=" and sys.byteorder == "big"):
            a = a.astype(a.dtype.newbyteorder("<"))
        if a.dtype.str not in DTYPES:
            raise ModelFileError(f"cannot write {name}: arrays of {a.dtype} are not a "
                                 f"section type")
        key = (a.__array_interface__["data"][0], a.dtype.str, a.shape)
        if a.size and key in self._sections:
            return self._sections[key]
        content = None
        if a.nbytes >= _SHARED_MIN_BYTES:
            digest = hashlib.blake2b(a.view(np.uint8).reshape(-1), digest_size=16).digest()
            content = (a.dtype.str, a.shape, digest)
            same = self._contents.get(content)
            if same is not None and np.array_equal(self.arrays[same - 1][1].view(np.uint8),
                                                   a.view(np.uint8)):
                self._sections[key] = same
                return same
        self.arrays.append((name, a))
        self._sections[key] = len(self.arrays)
        if content is not None:
            self._contents.setdefault(content, len(self.arrays))
        return len(self.arrays)

    def __call__(self, v: Any, name: str) -> Any:
        if isinstance(v, np.ndarray):
            return {"$a": self.section(v, name)}
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (float, np.floating)):
            return float(v)
        if isinstance(v, tuple):
            return {"$t": [self(x, f"{name}[{i}]") for i, x in enumerate(v)]}
        if isinstance(v, list):
            return [self(x, f"{name}[{i}]") for i, x in enumerate(v)]
        if isinstance(v, dict):
            if all(isinstance(k, str) and not k.startswith("$") for k in v):
                return {k: self(x, f"{name}.{k}") for k, x in v.items()}
            return {"$m": [[self(k, f"{name} key"), self(x, f"{name}[{k!r}]")]
                           for k, x in v.items()]}
        raise ModelFileError(f"cannot write {name}: a {type(v).__name__} value")


#: the JSON values a description holds that decode to themselves
_PLAIN = frozenset((str, int, float, bool, type(None)))
_TAGGED = operator.methodcaller("startswith", "$")


def _decode(v: Any, arrays: list, where: str) -> Any:
    """The value :class:`_Encoder` wrote (``arrays``: the sections' arrays, index 0 None)."""
    if isinstance(v, list):
        return [_decode(x, arrays, where) for x in v]
    if not isinstance(v, dict):
        return v
    if len(v) == 1:
        (tag, body), = v.items()
        if tag == "$a":
            if not (isinstance(body, int) and not isinstance(body, bool)
                    and 1 <= body < len(arrays)):
                raise ModelFileError(f"{where}: names section {body!r}, which is not an array "
                                     f"section", section=0, section_name="description")
            return arrays[body]
        if tag == "$t" and isinstance(body, list):
            if _PLAIN.issuperset(map(type, body)):      # names, numbers: nothing to decode
                return tuple(body)
            return tuple(_decode(x, arrays, where) for x in body)
        if tag == "$m" and isinstance(body, list):
            if not all(isinstance(p, list) and len(p) == 2 for p in body):
                raise ModelFileError(f"{where}: a mapping that is not pairs", section=0,
                                     section_name="description")
            try:
                return {_decode(k, arrays, where): _decode(x, arrays, where) for k, x in body}
            except TypeError:           # an unhashable key
                raise ModelFileError(f"{where}: a mapping's key is not a value", section=0,
                                     section_name="description") from None
    if any(map(_TAGGED, v)):
        raise ModelFileError(f"{where}: unknown tag in {sorted(v)}", section=0,
                             section_name="description")
    out = {}
    for k, x in v.items():
        if type(x) is dict and len(x) == 1 and type(x.get("$a")) is int \
                and 0 < x["$a"] < len(arrays):          # an array: a layout's field
            out[k] = arrays[x["$a"]]
        else:
            out[k] = _decode(x, arrays, where)
    return out


# -- writing --------------------------------------------------------------------------------
def _ensemble_fields(ens: Ensemble) -> dict:
    """Every field of ``ens`` as a value :class:`_Encoder` writes (the trees: their packed
    arrays)."""
    if ens.ctr is not None:
        raise ModelFileError("a model with CatBoost CTR features cannot be written to a "
                             ".qsm file (its CTR stage is not a section type yet); score "
                             "its .cbm or JSON file")
    out = {}
    for f in dataclasses.fields(Ensemble):
        value = getattr(ens, f.name)
        if f.name == "trees":
            value = {k: v for k, v in ens.trees.arrays.items() if v is not None}
        out[f.name] = value
    return out


def compile_records(model, tuning=None) -> tuple[Ensemble, dict, Any]:
    """A copy of ``model``'s ensemble, the prepared results of every layout the automatic
    choice runs for it under ``tuning`` (default the model's), each built by a call of one of
    :data:`WARM_ROWS` rows (on one thread and on two) through a fresh model, and that fresh
    model."""
    ens = dataclasses.replace(model.ensemble)     # one no layout cache holds yet
    store = prepared.Store(recording=True)
    prepared.attach(ens, store)
    fresh = type(model)(ens, prepare="auto", tuning=tuning or model.tuning)
    rng = np.random.default_rng(0)
    for rows in WARM_ROWS:      # (the choice's facts and algorithms are computed, so recorded)
        X = rng.standard_normal((rows, ens.n_inputs))
        for n_threads in (1, 2):
            fresh.predict_raw(X, n_threads=n_threads)
    return ens, store.records, fresh


#: the C library's index (capi/quickscorer.c): its magic, version, words before the array
#: slots and array slots
C_INDEX_MAGIC = b"QSCINDEX"
C_INDEX_VERSION = 5
C_INDEX_HEAD = 17
C_INDEX_SLOTS = ("tree_group", "tree_weight", "tree_leaf_offset", "leaf_value",
                 "leaf_value_f32", "base_score", "lin_offset", "lin_const", "lin_feature",
                 "lin_coeff", "feature", "threshold", "flags", "left", "right", "cat_offset",
                 "cat_nwords", "cat_words", "node_offset", "sum_weight", "bag_offset")
#: the RapidScorer layout's arrays the index names after the forest's, in the order of
#: rapidscorer/view.h's rs_arrays (version 2 on, the gathered walk's from version 3; the C
#: library scores calls of many rows with them)
C_INDEX_RS_SLOTS = _rapidscorer.ARRAY_NAMES
#: from version 4: the walk's layout as Python's walk reads it (walk.walk_arrays: its table in
#: the kernels' form, the roots, the expanded row's columns and the special nodes' fields;
#: from version 5 its complete trees too: slots, offsets, depths and end slots' leaves)
C_INDEX_WALK_SLOTS = ("walk_table", "roots", "fill_cols", "feature", "threshold", "flags",
                      "cat_offset", "cat_nwords", "cnodes", "cnode_offset", "cdepth",
                      "cslot_offset", "cslot_leaf")
#: the sums of the exit leaves the C library carries (``Ensemble.leaf_sum``; 0: the family's)
C_INDEX_SUMS = {None: 0, "ranklib": 1}


def c_index(ens: Ensemble, enc: _Encoder, plan=None) -> np.ndarray:
    """The C library's index of ``ens`` (the file's last section): the model's counts, its
    output transform, and the section of each array the C library scores from (the forest's
    and the reference walk's node table, :func:`~.algorithms.traversal.node_arrays`), which
    ``enc`` writes where they are not written yet; then, where ``plan`` (the compiled
    model's :class:`~.plan.KernelPlan`) runs RapidScorer for calls of many rows, the rows a
    thread from which it does, its layout's switches and arrays (0: none)."""
    arrays = {**forest_arrays(ens), **node_arrays(ens)}
    # RankLib's sum reads each tree's weight as the double its file gives, and its forest's
    # bags (ir/sums.py ranklib_sum)
    ranklib = ens.leaf_sum == "ranklib"
    arrays["sum_weight"] = (np.ones(len(ens.trees)) if ens.tree_weight is None
                            else np.asarray(ens.tree_weight, np.float64)) if ranklib else None
    arrays["bag_offset"] = (None if ens.bag_offsets is None
                            else np.asarray(ens.bag_offsets, np.int64))
    head = [
        int.from_bytes(C_INDEX_MAGIC, "little"), C_INDEX_VERSION, FAMILY_CODE[ens.family],
        ens.n_features, ens.n_outputs, len(ens.trees), int(arrays["feature"].shape[0]),
        int(arrays["leaf_value"].shape[0]),
        0 if arrays["lin_feature"] is None else int(arrays["lin_feature"].shape[0]),
        int(arrays["cat_words"].shape[0]), TRANSFORM_CODES[ens.transform],
        _f64_bits(float(dict(ens.transform_params).get("sigmoid", 1.0))),
        _f64_bits(float(ens.n_iterations) if ens.average_output else 1.0),
        0, C_INDEX_SUMS[ens.leaf_sum],
        0 if ens.bag_offsets is None else int(len(ens.bag_offsets)) - 1, len(C_INDEX_SLOTS),
    ]
    slots = [0 if arrays[k] is None else enc.section(arrays[k], f"c index {k}")
             for k in C_INDEX_SLOTS]
    assert len(head) == C_INDEX_HEAD
    return np.array(head + slots + _c_index_rs(plan, enc) + _c_index_walk(plan, enc),
                    np.uint64)


def _c_index_rs(plan, enc: _Encoder) -> list[int]:
    """The index's RapidScorer part: the rows a thread from which the automatic choice runs
    it (0: it does not, and nothing follows but the zero words), the layout's least lanes of
    a level walk, its groups a level chunk, whether it is of the level path alone, the number
    of arrays, then their sections (the records' own, written once)."""
    n = len(C_INDEX_RS_SLOTS)
    rs = None if plan is None else plan.prepared.get("rapidscorer")
    if rs is None or plan.bounds[-1] != "rapidscorer" or plan.bounds[0] is not None:
        return [0, 0, 0, 0, n] + [0] * n
    a = rs._arrays
    return ([int(plan.rs_from), int(rs.layout.levels_min_lanes), int(rs.level_chunk),
             int(rs.levels_only), n]
            + [enc.section(np.asarray(a[k]), f"c index {k}") for k in C_INDEX_RS_SLOTS])


def _c_index_walk(plan, enc: _Encoder) -> list[int]:
    """The index's walk part: the number of arrays, then their sections (the record's own),
    where the compiled model's walk is prepared: the C library then walks its table and,
    where it has them, its complete trees in place (preorder, columns, slots and all)
    instead of building its own; zeros otherwise."""
    n = len(C_INDEX_WALK_SLOTS)
    walk = None if plan is None else plan.prepared.get("walk")
    if walk is None:
        return [n] + [0] * n
    a = walk._arrays
    return [n] + [enc.section(np.asarray(a[k]), f"c index walk {k}") for k in C_INDEX_WALK_SLOTS]


def _f64_bits(x: float) -> int:
    return int(np.array(x, np.float64).view(np.uint64))


def describe(model, tuning=None) -> tuple[dict, list[np.ndarray]]:
    """The description (section 0) and the arrays (sections 1, 2, ...) of ``model``'s
    prepared model file: its ensemble and the records :func:`compile_records` makes."""
    ens, records, fresh = compile_records(model, tuning)
    enc = _Encoder()
    meta = {
        "format": "quickscorer prepared model",
        "quickscorer": __version__,
        "layouts_revision": LAYOUTS_REVISION,
        "ensemble": enc(_ensemble_fields(ens), "ensemble"),
        "records": {k: enc(v, f"record {k}") for k, v in sorted(records.items())},
        "compiled_on": {"isa": cpu.isa_name(cpu.isa_code(model.tuning.isa)),
                        "l2_cache_bytes": cpu.l2_cache_bytes()},
    }
    # last: the C library finds its index there
    meta["c_index"] = {"$a": enc.section(c_index(ens, enc, fresh.plan), "c index")}
    meta["arrays"] = [[name, a.dtype.str, list(a.shape)] for name, a in enc.arrays]
    return meta, [a for _, a in enc.arrays]


def pack(meta: dict, arrays: list[np.ndarray], version: int = FORMAT_VERSION) -> bytes:
    """The container (qsm.h) of a description and its arrays, in order, each checksummed;
    ``version`` 1 (the older checksums, qsm.h) for the tests of an older file."""
    blobs = [json.dumps(meta, separators=(",", ":"), allow_nan=True).encode()]
    blobs += [np.ascontiguousarray(a).view(np.uint8).reshape(-1).tobytes() if a.size else b""
              for a in arrays]
    align = _qsm.ALIGN
    pos = _qsm.HEADER_BYTES
    entries = []
    for i, blob in enumerate(blobs):
        pos = -(-pos // align) * align
        entries.append((pos, len(blob), _qsm.checksum(np.frombuffer(blob, np.uint8), version),
                        0 if i == 0 else 1))
        pos += len(blob)
    table = -(-pos // 8) * 8
    size = table + _qsm.ENTRY_BYTES * len(entries)
    out = bytearray(size)
    for (off, n, _, _), blob in zip(entries, blobs):
        out[off:off + n] = blob
    tab = bytearray()
    for off, n, h, kind in entries:
        tab += off.to_bytes(8, "little") + n.to_bytes(8, "little") + h.to_bytes(8, "little")
        tab += kind.to_bytes(4, "little") + bytes(4)
    out[table:] = tab
    head = bytearray(_qsm.HEADER_BYTES)
    head[0:8] = _qsm.MAGIC
    head[8:12] = version.to_bytes(4, "little")
    head[12:16] = _qsm.HEADER_BYTES.to_bytes(4, "little")
    head[16:24] = size.to_bytes(8, "little")
    head[24:32] = table.to_bytes(8, "little")
    head[32:36] = len(entries).to_bytes(4, "little")
    head[40:48] = _qsm.checksum(np.frombuffer(bytes(tab), np.uint8), version).to_bytes(8, "little")
    head[56:64] = _qsm.checksum(np.frombuffer(bytes(head[:56]), np.uint8),
                                 version).to_bytes(8, "little")
    out[:_qsm.HEADER_BYTES] = head
    return bytes(out)


def unpack(data) -> tuple[dict, list[np.ndarray]]:
    """The description and arrays of a container that passes its checks (copies; for tools
    and tests that rewrite a file: :func:`pack` takes them back)."""
    buf = memoryview(data).toreadonly()
    sections = _qsm.check(np.frombuffer(buf, np.uint8), True)
    meta = _description(buf, sections)
    names = [spec[0] if isinstance(spec, list) and spec else "?" for spec in meta["arrays"]]
    return meta, [_array(buf, s, sections[s], meta["arrays"][s - 1], names).copy()
                  for s in range(1, len(sections))]


def to_bytes(model, tuning=None) -> bytes:
    """The prepared model file of ``model`` as bytes (:func:`save` writes them)."""
    return pack(*describe(model, tuning))


def save(model, path, tuning=None) -> Path:
    """Write ``model``'s prepared model file to ``path``: to a temporary file beside it,
    flushed to disk, then renamed over ``path``, so that a process mapping the old file
    keeps it whole and a new open sees the new file whole (docs/model-file.md)."""
    path = Path(path)
    data = to_bytes(model, tuning)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


# -- reading --------------------------------------------------------------------------------
class Opened:
    """A prepared model file opened: its ensemble (views of the file), the store of its
    prepared results, and what the file says of itself."""

    def __init__(self, ensemble: Ensemble, store: prepared.Store, meta: dict):
        self.ensemble = ensemble
        self.store = store
        self.meta = meta


def _fail(message: str, section: int, names: list | None) -> ModelFileError:
    name = None
    if section == 0:
        name = "description"
    elif names is not None and 0 < section <= len(names):
        name = str(names[section - 1])
    where = f"section {section}" + (f" ({name})" if name else "")
    if message.startswith(f"section {section}:"):
        message = message[len(f"section {section}:"):].lstrip()
    return ModelFileError(f"{where}: {message}" if section >= 0 else message, section=section,
                          section_name=name)


def _description(buf, sections) -> dict:
    off, n, _ = sections[0]
    try:
        meta = json.loads(bytes(buf[off:off + n]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _fail(f"not JSON ({exc})", 0, None) from None
    if not isinstance(meta, dict) or meta.get("format") != "quickscorer prepared model":
        raise _fail("not a quickscorer model description", 0, None)
    arrays = meta.get("arrays")
    if not isinstance(arrays, list) or len(arrays) != len(sections) - 1:
        raise _fail(f"describes {len(arrays) if isinstance(arrays, list) else 'no'} arrays "
                    f"for {len(sections) - 1} array sections", 0, None)
    return meta


#: each written dtype as this machine reads it: (dtype, whether a copy in native order is
#: needed: a big-endian machine's)
_READ_DTYPES = {name: (np.dtype(name), np.dtype(name).str != np.dtype(name).newbyteorder(
    "=").str) for name in DTYPES}


#: the dtypes this machine reads in place, for _qsm.views (none that a copy must swap)
_VIEW_DTYPES = {name: dt for name, (dt, swapped) in _READ_DTYPES.items() if not swapped}


def _array(buf, section: int, entry, spec, names) -> np.ndarray:
    off, n, _ = entry
    shape = spec[2] if type(spec) is list and len(spec) == 3 else None
    read = _READ_DTYPES.get(spec[1]) if shape is not None and type(spec[1]) is str else None
    # (no array of ours has no dimensions: the kernels read shape[0] unchecked)
    if (read is None or type(spec[0]) is not str or type(shape) is not list
            or not 1 <= len(shape) <= 8 or not {int}.issuperset(map(type, shape))
            or min(shape) < 0):
        raise _fail(f"described as {str(spec)[:80]}, not (name, dtype, shape of 1 to 8 "
                    f"dimensions)", section, names)
    dtype, swapped = read
    count = 1
    for d in shape:
        count *= d
    if count * dtype.itemsize != n:
        raise _fail(f"holds {n} bytes, not the {count} x {dtype.itemsize} of its shape "
                    f"{tuple(shape)}", section, names)
    if count == 0:
        a = np.zeros(shape, dtype)
        a.setflags(write=False)
        return a
    a = np.frombuffer(buf, dtype, count, off)
    if len(shape) > 1:
        a = a.reshape(shape)
    if swapped:                                   # a big-endian machine reads a copy
        a = a.astype(dtype.newbyteorder("="))
        a.setflags(write=False)
    return a


def _ensemble(fields: Any, arrays: list) -> Ensemble:
    if not isinstance(fields, dict):
        raise _fail("holds no ensemble", 0, None)
    fields = _decode(fields, arrays, "ensemble")
    known = {f.name for f in dataclasses.fields(Ensemble)}
    unknown = set(fields) - known
    if unknown:
        raise ModelFileError(f"the ensemble has fields this quickscorer does not know: "
                             f"{sorted(unknown)} (a newer writer; open it with a newer "
                             f"quickscorer)")
    trees = fields.pop("trees", None)
    if not isinstance(trees, dict) or not all(isinstance(v, np.ndarray) for v in trees.values()):
        raise ModelFileError("the ensemble's trees are not arrays")
    n_features = fields.get("n_features")
    if (not isinstance(n_features, int) or isinstance(n_features, bool) or n_features < 1
            or n_features >= 2 ** 31):      # a node's feature is an int32
        raise ModelFileError(f"the ensemble's n_features is {n_features!r}")
    n_outputs, base = fields.get("n_outputs"), fields.get("base_score")
    # a written ensemble holds a base score per output: an output count alone sizes nothing
    if not (isinstance(base, np.ndarray) and base.ndim == 1 and isinstance(n_outputs, int)
            and base.shape[0] == n_outputs):
        raise ModelFileError(f"the ensemble's n_outputs ({n_outputs!r}) is not the number of "
                             f"its base scores")
    try:
        check_packed(trees, n_features)
        return Ensemble(trees=PackedTrees(trees), **fields)
    except ModelFormatError as exc:
        raise ModelFileError(f"the ensemble: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"the ensemble's fields do not make a model: {exc}") from None


def open_buffer(buf, verify: bool = True, separate: bool = False) -> Opened:
    """Open the prepared model file in ``buf`` (a read-only mapping or bytes-like object): its
    arrays are views of ``buf``. ``verify``: check every section's checksum (the header's and
    the table's are checked always). ``separate``: each array copied into an allocation of
    its own, so that a memory checker sees a read past any one of them (the fuzz test)."""
    data = np.frombuffer(buf, np.uint8)
    sections = _qsm.check(data, verify)        # ModelFileError; a section's index named below
    meta = _description(buf, sections)
    arrays = _qsm.views(data, sections, meta["arrays"], _VIEW_DTYPES) if not separate else None
    if arrays is None:          # a big-endian machine, a separate copy, or a spec at fault
        names = [spec[0] if isinstance(spec, list) and spec else "?"
                 for spec in meta["arrays"]]
        arrays = [None]
        for s in range(1, len(sections)):
            a = _array(buf, s, sections[s], meta["arrays"][s - 1], names)
            if separate:
                a = a.copy()
                a.setflags(write=False)
            arrays.append(a)
    ens = _ensemble(meta.get("ensemble"), arrays)
    records: dict = {}
    if (meta.get("quickscorer") == __version__
            and meta.get("layouts_revision") == LAYOUTS_REVISION
            and isinstance(meta.get("records"), dict)):
        records = {k: _decode(v, arrays, f"record {k}") for k, v in meta["records"].items()}
    store = prepared.Store(records)
    prepared.attach(ens, store)
    return Opened(ens, store, meta)


def _checked_open(buf, verify: bool, separate: bool = False) -> Opened:
    try:
        return open_buffer(buf, verify, separate)
    except ModelFileError as exc:
        if exc.section > 0 and exc.section_name is None:       # name it from the description
            try:
                sections = _qsm.check(np.frombuffer(buf, np.uint8), False)
                names = [spec[0] for spec in _description(buf, sections)["arrays"]]
            except (ModelFileError, TypeError, IndexError, KeyError):
                raise exc from None
            raise _fail(str(exc), exc.section, names) from None
        raise


def _advise_large_folios(mm: mmap.mmap) -> None:
    """Ask that the pages this mapping reads into the page cache come in as large folios,
    which every later mapping of the file, in any process, maps in far fewer steps (the
    C library's qs_open asks the same; python -m benchmarks.load_time --page-cache
    reread measures it). An advice: where it is refused, or the pages are cached already,
    nothing changes."""
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if advice is not None:
        try:
            mm.madvise(advice)
        except OSError:
            pass


def open_path(path, verify: bool = True) -> Opened:
    """Map the prepared model file at ``path`` read-only and open it (:func:`open_buffer`).
    The mapping lives as long as any of its arrays: replace the file by renaming a new one
    over it, never by writing into it (docs/model-file.md)."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            raise ModelFileError(f"{path}: the file is empty")
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    _advise_large_folios(mm)
    try:
        return _checked_open(mm, verify)
    except ModelFileError as exc:
        raise ModelFileError(f"{path}: {exc}", section=exc.section, code=exc.code,
                             section_name=exc.section_name) from None


def open_bytes(data, verify: bool = True, separate: bool = False) -> Opened:
    """Open a prepared model file held in memory (bytes, bytearray, memoryview)
    (``separate``: as for :func:`open_buffer`)."""
    return _checked_open(memoryview(data).toreadonly(), verify, separate)
