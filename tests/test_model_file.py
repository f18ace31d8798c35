"""The prepared model file (.qsm): the same scores bit for bit as the model it came from, its
layouts taken as written, and a clear error for every damaged, newer or hostile file."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import random_ensemble, special_rows

import quickscorer
from quickscorer import capi, model_file
from quickscorer.errors import ModelFileError


@pytest.mark.parametrize("family,n_outputs,max_leaves", [
    ("lightgbm", 1, 40), ("xgboost", 1, 200), ("xgboost", 3, 20), ("plain", 1, 9),
    ("lightgbm", 2, 255)])
def test_a_prepared_file_scores_as_its_model_bit_for_bit(tmp_path, family, n_outputs,
                                                          max_leaves):
    rng = np.random.default_rng(len(family) + n_outputs)
    ens = random_ensemble(rng, family, n_trees=60, n_outputs=n_outputs, max_leaves=max_leaves,
                          p_categorical=0.15 if family == "lightgbm" else 0.0)
    model = quickscorer.Model(ens)
    path = model.save(tmp_path / "m.qsm")
    opened = quickscorer.load(path)
    X = special_rows(rng, 700, ens.n_features)
    for n in (1, 2, 3, 7, 40, 700):
        for n_threads in (1, 2):
            assert np.array_equal(opened.predict(X[:n], n_threads=n_threads),
                                  model.predict(X[:n], n_threads=n_threads))
    assert np.array_equal(opened.predict_leaf(X), model.predict_leaf(X))
    layouts = opened.info()["model_file_layouts"]
    assert layouts["taken"] and layouts["computed"] == []   # nothing rebuilt at open


def test_the_file_is_written_whole_and_the_same_each_time(tmp_path):
    model = quickscorer.Model(random_ensemble(np.random.default_rng(0), "lightgbm"))
    a = model_file.to_bytes(model)
    assert a == model_file.to_bytes(model)
    model.save(tmp_path / "m.qsm")
    assert (tmp_path / "m.qsm").read_bytes() == a
    assert [p.name for p in tmp_path.iterdir()] == ["m.qsm"]      # no temporary file left


def test_another_release_s_file_is_opened_from_its_trees():
    model = quickscorer.Model(random_ensemble(np.random.default_rng(1), "xgboost"))
    meta, arrays = model_file.unpack(model_file.to_bytes(model))
    meta["quickscorer"] = "0.0.0-other"
    opened = quickscorer.load(model_file.pack(meta, arrays))
    X = np.random.default_rng(2).standard_normal((300, 5))
    assert np.array_equal(opened.predict(X), model.predict(X))
    layouts = opened.info()["model_file_layouts"]
    assert layouts["taken"] == [] and layouts["computed"]


M64 = (1 << 64) - 1


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _checksum2(data: bytes, key: list[int]) -> int:
    """Format version 2's checksum (qsm.h qsm_checksum2) word by word in plain Python."""
    p1, p2, p3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
    acc = [k ^ p3 for k in key[:8]]
    n, whole = len(data), len(data) // 1024 * 1024
    padded = data + bytes(-n % 64)

    def stripe(at, s):
        for j in range(8):
            x = int.from_bytes(padded[at + 8 * j:at + 8 * j + 8], "little")
            k = x ^ key[s + j]
            acc[j ^ 1] = (acc[j ^ 1] + x) & M64
            acc[j] = (acc[j] + (k & 0xFFFFFFFF) * (k >> 32)) & M64

    for b in range(0, whole, 1024):
        for s in range(16):
            stripe(b + 64 * s, s)
        acc[:] = [((a ^ (a >> 47) ^ key[24 + j]) * 0x9E3779B1) & M64 for j, a in enumerate(acc)]
    for s, at in enumerate(range(whole, len(padded), 64)):
        stripe(at, s)
    h = n * p1 & M64
    for a in acc:
        r = (_rotl((a * p2) & M64, 31) * p1) & M64
        h = (_rotl(h ^ r, 27) * p1 + p3) & M64
    for shift, prime in ((33, p2), (29, p3)):
        h = ((h ^ (h >> shift)) * prime) & M64
    return h ^ (h >> 32)


def test_the_checksum_is_its_definition_on_every_path():
    """The checksum the container writes (qsm.h, AVX2 where the CPU has it) against its
    definition word by word: whole 1 KiB blocks, whole stripes after them and a last
    partial stripe, and a moved stripe or block changes it."""
    key = list(model_file._qsm.CHECKSUM2_KEY)
    assert len(key) == 32 and len(set(key)) == 32
    rng = np.random.default_rng(7)
    data = rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()
    for n in (0, 1, 8, 63, 64, 65, 1023, 1024, 1025, 2048 + 64 * 5 + 17, 5000):
        assert model_file._qsm.checksum(np.frombuffer(data[:n], np.uint8)) == \
            _checksum2(data[:n], key), n
    h = model_file._qsm.checksum(np.frombuffer(data[:4096], np.uint8))
    for a, b, size in ((0, 64, 64), (64, 1024 + 64, 64), (0, 1024, 1024)):
        moved = bytearray(data[:4096])
        moved[a:a + size], moved[b:b + size] = data[b:b + size], data[a:a + size]
        assert model_file._qsm.checksum(np.frombuffer(bytes(moved), np.uint8)) != h
    zeros = np.zeros(2048, np.uint8)
    assert model_file._qsm.checksum(zeros) != model_file._qsm.checksum(zeros[:2040])


def test_a_file_of_format_version_1_is_still_read():
    """A file written with version 1's checksums opens and scores as the model, in Python
    and through the C library."""
    model = quickscorer.Model(random_ensemble(np.random.default_rng(4), "lightgbm"))
    meta, arrays = model_file.unpack(model_file.to_bytes(model))
    old = model_file.pack(meta, arrays, version=1)
    assert int.from_bytes(old[8:12], "little") == 1
    X = np.random.default_rng(5).standard_normal((50, model.n_features))
    assert np.array_equal(quickscorer.load(old).predict(X), model.predict(X))
    if capi_library():
        with capi.CModel(old) as c:
            np.testing.assert_array_equal(c.predict(X)[:, 0], model.predict(X))
    damaged = bytearray(old)
    damaged[-40] ^= 1                   # a byte of the table: version 1's checksum sees it
    with pytest.raises(ModelFileError, match="checksum"):
        quickscorer.load(bytes(damaged))


def test_damaged_newer_and_foreign_files_are_refused_by_name(tmp_path):
    good = model_file.to_bytes(quickscorer.Model(
        random_ensemble(np.random.default_rng(3), "lightgbm")))
    with pytest.raises(ModelFileError, match="truncated"):
        quickscorer.load(good[:len(good) // 2])
    newer = bytearray(good)
    newer[8] = 99
    with pytest.raises(ModelFileError, match="format version 99, newer"):
        quickscorer.load(bytes(newer))
    meta, arrays = model_file.unpack(good)
    at = max(range(len(arrays)), key=lambda i: arrays[i].nbytes)
    name = meta["arrays"][at][0]
    off = good.index(arrays[at].tobytes())
    flipped = bytearray(good)
    flipped[off + 3] ^= 0x10
    with pytest.raises(ModelFileError,
                       match=re.escape(f"section {at + 1} ({name}): checksum")):
        quickscorer.load(bytes(flipped))
    (tmp_path / "empty.qsm").write_bytes(b"")
    (tmp_path / "short.qsm").write_bytes(good[:8])
    with pytest.raises(ModelFileError, match="truncated"):
        quickscorer.load(tmp_path / "short.qsm")
    with pytest.raises(quickscorer.ModelFormatError, match="no .qsm magic"):
        quickscorer.load(b"{}", format="qsm")


def _first_fault(left, right, n_leaf):
    """The rule check_packed enforces on one tree, in plain Python: the internal nodes
    numbered breadth-first (read node by node, left child before right, the internal children
    are 1, 2, ... in turn, each node below the count of children seen before it), then the
    leaves left to right (each subtree's leaves end just before its right sibling's, the
    root's are 0 .. n_leaf - 1). The first node at fault by the first rule, else the last by
    the second, else the root; None for a canonical tree."""
    m = len(left)
    nxt = 1
    for n in range(m):
        if nxt <= n:
            return n
        for c in (left[n], right[n]):
            if c >= 0:
                if c != nxt or c >= m:
                    return n
                nxt += 1
    lo, hi = [0] * m, [0] * m
    for n in range(m - 1, -1, -1):
        (a0, a1), (b0, b1) = ((lo[c], hi[c]) if c >= 0 else (~c, ~c)
                              for c in (left[n], right[n]))
        if a1 + 1 != b0:
            return n
        lo[n], hi[n] = a0, b1
    return None if m == 0 or (lo[0], hi[0]) == (0, n_leaf - 1) else 0


def test_the_trees_check_names_the_first_node_at_fault():
    """_build.check_packed (a file's trees, before anything reads them) on trees damaged at
    random: the tree and node the plain rule names, and None for the undamaged ones."""
    from quickscorer.ir import _build
    rng = np.random.default_rng(9)
    ens = random_ensemble(rng, "lightgbm", n_trees=30, max_leaves=40)
    a = ens.trees.arrays
    no, lo = a["node_offset"], a["leaf_offset"]
    paths = _trees_check_paths()
    assert 0 in paths and _build.check_packed(a["left"], a["right"], no, lo) is None
    for isa in paths:
        assert _build.check_packed(a["left"], a["right"], no, lo, isa=isa) is None
    for _ in range(400):
        left, right = a["left"].copy(), a["right"].copy()
        for _ in range(int(rng.integers(1, 3))):
            side = left if rng.random() < 0.5 else right
            i = int(rng.integers(side.shape[0]))
            side[i] = int(rng.choice([side[i] + 1, side[i] - 1, ~side[i], 0, -1, 10 ** 6,
                                      -10 ** 6, side[int(rng.integers(side.shape[0]))]]))
        want = None
        for t in range(len(no) - 1):
            n = _first_fault(list(left[no[t]:no[t + 1]]), list(right[no[t]:no[t + 1]]),
                             int(lo[t + 1] - lo[t]))
            if n is not None:
                want = (t, n)
                break
        assert _build.check_packed(left, right, no, lo) == want
        for isa in paths:
            assert _build.check_packed(left, right, no, lo, isa=isa) == want, isa


def test_the_trees_value_check_finds_each_rule_broken_at_every_place_on_every_path():
    """_build.check_values (the trees' value rules of a file, in one pass a field) on fields
    with one value made wrong, at the first, last or any place, on the portable path and on
    AVX2's where it runs: the first rule broken in check_packed's order, else 0."""
    from quickscorer.ir import _build
    rng = np.random.default_rng(10)
    n, n_leaves, F = 203, 211, 7
    good = {"feature": rng.integers(F, size=n).astype(np.int32),
            "default_left": (rng.random(n) < 0.5).view(np.uint8),
            "is_categorical": np.zeros(n, np.uint8),
            "missing_type": rng.integers(3, size=n).astype(np.uint8),
            "threshold": rng.normal(size=n), "leaf_value": rng.normal(size=n_leaves)}
    bad = [("feature", -1, 1), ("feature", F, 1), ("feature", -2 ** 31, 1),
           ("default_left", 2, 2), ("is_categorical", 255, 3), ("missing_type", 3, 4),
           ("threshold", np.nan, 5), ("threshold", -np.nan, 5), ("leaf_value", np.inf, 6),
           ("leaf_value", -np.inf, 6), ("leaf_value", np.nan, 6)]

    def check(f, isa):
        return _build.check_values(f["feature"], f["default_left"], f["is_categorical"],
                                   f["missing_type"], f["threshold"].view(np.uint64),
                                   f["leaf_value"].view(np.uint64), F, 2, isa=isa)
    for isa in _trees_check_paths():          # (one CPU test for both checks' paths)
        assert check(good, isa) == (0, False)
        edge = dict(good, threshold=np.array([np.inf, -np.inf, 0.0] * 67 + [1e308, -0.0]))
        assert check(edge, isa) == (0, False)           # infinite thresholds are sound
        cat = dict(good, is_categorical=good["is_categorical"].copy())
        cat["is_categorical"][-1] = 1
        assert check(cat, isa) == (0, True)
        for field, value, fault in bad:
            for at in (0, good[field].shape[0] - 1, int(rng.integers(good[field].shape[0]))):
                f = dict(good, **{field: good[field].copy()})
                f[field][at] = value
                assert check(f, isa)[0] == fault, (isa, field, value, at)
        two = dict(good, missing_type=good["missing_type"].copy(),
                   leaf_value=good["leaf_value"].copy())
        two["missing_type"][5], two["leaf_value"][9] = 7, np.nan
        assert check(two, isa)[0] == 4                  # the first rule in order


def test_the_trees_check_is_its_rule_on_every_small_tree():
    """_build.check_packed on every child array of one and two internal nodes whose values
    lie within a leaf or node of the tree's range, and on random ones of three to twelve (one
    step of AVX2's eight nodes, partial and whole), each path against the plain rule."""
    import itertools

    from quickscorer.ir import _build
    rng = np.random.default_rng(11)

    def cases():
        for m in (1, 2):
            for combo in itertools.product(range(-(m + 2), m + 1), repeat=2 * m):
                yield m, combo
        for _ in range(6000):
            m = int(rng.integers(3, 13))
            yield m, rng.integers(-(m + 2), m + 1, size=2 * m)
    n_sound, paths = 0, _trees_check_paths()
    for m, combo in cases():
        left = np.array(combo[0::2], np.int32)
        right = np.array(combo[1::2], np.int32)
        fault = _first_fault(list(left), list(right), m + 1)
        want = None if fault is None else (0, fault)
        n_sound += want is None
        no, lo = np.array([0, m]), np.array([0, m + 1])
        for isa in paths:
            assert _build.check_packed(left, right, no, lo, isa=isa) == want, (isa, combo)
    assert n_sound >= 3                  # the sound trees of one and two nodes among them


def _trees_check_paths() -> list[int]:
    """The paths of _build's checks this CPU runs: 0 (portable), and 1 (AVX2) where it has
    it."""
    from quickscorer.ir import _build
    one = np.array([-1], np.int32), np.array([-2], np.int32), np.array([0, 1]), np.array([0, 2])
    paths = []
    for isa in (0, 1):
        try:
            _build.check_packed(*one, isa=isa)
            paths.append(isa)
        except ValueError:
            pass
    return paths


@pytest.mark.parametrize("field,value,match", [
    ("feature", -1, "'feature' names a feature outside"),
    ("feature", 5, "'feature' names a feature outside"),
    ("default_left", 2, "'default_left' holds a value that is not a bool"),
    ("is_categorical", 7, "'is_categorical' holds a value that is not a bool"),
    ("missing_type", 3, "'missing_type' holds an unknown missing type"),
    ("threshold", np.nan, "NaN threshold"),
    ("leaf_value", np.inf, "'leaf_value' holds a value that is not finite"),
    ("leaf_value", np.nan, "'leaf_value' holds a value that is not finite")])
def test_a_node_or_leaf_value_out_of_range_is_refused_by_name(field, value, match):
    """One value of the trees' fields, written wrong into a file (the last node's or leaf's,
    the first's for a feature): the open refuses it, naming the field."""
    good = model_file.to_bytes(quickscorer.Model(
        random_ensemble(np.random.default_rng(4), "lightgbm", max_leaves=30, n_features=5)))
    meta, arrays = model_file.unpack(good)
    names = [a[0] for a in meta["arrays"]]
    bad = list(arrays)
    i = names.index(f"ensemble.trees.{field}")
    bad[i] = bad[i].copy()
    bad[i].view(np.uint8 if bad[i].dtype == np.bool_ else bad[i].dtype)[
        0 if field == "feature" else -1] = value
    with pytest.raises(ModelFileError, match=re.escape(match)):
        quickscorer.load(model_file.pack(meta, bad))


def test_a_hostile_tree_or_layout_is_refused_before_any_kernel_reads_it():
    good = model_file.to_bytes(quickscorer.Model(
        random_ensemble(np.random.default_rng(4), "lightgbm", max_leaves=30)))
    meta, arrays = model_file.unpack(good)
    names = [a[0] for a in meta["arrays"]]
    bad = list(arrays)
    i = names.index("ensemble.trees.left")
    bad[i] = bad[i].copy()
    bad[i][0] = 10 ** 6
    with pytest.raises(ModelFileError, match="child out of place"):
        quickscorer.load(model_file.pack(meta, bad))
    bad = list(arrays)
    i = next(k for k, n in enumerate(names) if n.endswith(".words"))
    bad[i] = bad[i].copy()
    bad[i][0] = 2 ** 31
    model = quickscorer.load(model_file.pack(meta, bad))
    with pytest.raises(ModelFileError, match="damaged"):
        model.predict(np.zeros((1, 5)), algorithm="quickscorer")


def test_a_file_replaced_by_rename_while_mapped_keeps_scoring(tmp_path):
    """A deploy (write beside, rename over) five times while a second thread scores the
    mapped model in a loop: every one of its calls gives the first model's scores."""
    rng = np.random.default_rng(5)
    first = quickscorer.Model(random_ensemble(rng, "lightgbm"))
    second = quickscorer.Model(random_ensemble(rng, "lightgbm"))
    path = first.save(tmp_path / "m.qsm")
    opened = quickscorer.load(path)
    X = rng.standard_normal((200, 5))
    expected = first.predict(X)
    stop, calls, wrong = threading.Event(), [0], []

    def score():
        while not stop.is_set():
            if not np.array_equal(opened.predict(X), expected):
                wrong.append(calls[0])
            calls[0] += 1

    scorer = threading.Thread(target=score)
    scorer.start()
    try:
        for _ in range(5):
            second.save(path)
    finally:
        stop.set()
        scorer.join()
    assert calls[0] > 0 and wrong == []
    assert np.array_equal(quickscorer.load(path).predict(X), second.predict(X))


def _advised(path) -> list[bool]:
    """For each mapping of ``path`` in this process, whether the kernel holds the advice of
    large folios for it (``hg`` among its VmFlags in /proc/self/smaps)."""
    out, mine = [], False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = re.match(r"[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$", line)
        if head:
            mine = head.group(1) == str(path)
        elif mine and line.startswith("VmFlags:"):
            out.append("hg" in line.split()[1:])
    return out


def test_an_opened_file_is_mapped_with_the_advice_of_large_folios(tmp_path):
    """Python's open and the C library's ask that the pages their mapping reads in come as
    large folios (docs/model-file.md, "The page cache"), as /proc/self/smaps shows."""
    import mmap
    if not Path("/proc/self/smaps").exists() or not hasattr(mmap, "MADV_HUGEPAGE"):
        pytest.skip("the advice and its record are Linux's")
    path = quickscorer.Model(random_ensemble(np.random.default_rng(3), "lightgbm")).save(
        tmp_path / "m.qsm")
    with open(path, "rb") as fh:
        probe = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        probe.madvise(mmap.MADV_HUGEPAGE)
    except OSError:
        pytest.skip("this kernel refuses the advice (no transparent huge pages)")
    recorded = _advised(path) == [True]
    probe.close()
    if not recorded:
        pytest.skip("this kernel takes the advice but does not record it in smaps")
    assert _advised(path) == []
    opened = quickscorer.load(path)
    assert _advised(path) == [True]
    del opened
    import gc
    gc.collect()
    assert _advised(path) == []
    with capi.CModel(path) as c:
        assert c.n_features == 5 and _advised(path) == [True]
    assert _advised(path) == []


def test_an_advice_refused_or_unknown_leaves_the_open_as_it_was(tmp_path, monkeypatch):
    import mmap
    rng = np.random.default_rng(4)
    model = quickscorer.Model(random_ensemble(rng, "lightgbm"))
    path = model.save(tmp_path / "m.qsm")
    X = rng.standard_normal((50, 5))
    with open(path, "rb") as fh:
        probe = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    with pytest.raises(OSError):               # what an advice the kernel refuses raises
        probe.madvise(-1)
    probe.close()
    monkeypatch.setattr(mmap, "MADV_HUGEPAGE", -1, raising=False)
    assert np.array_equal(quickscorer.load(path).predict(X), model.predict(X))
    monkeypatch.delattr(mmap, "MADV_HUGEPAGE")              # a platform without it
    assert np.array_equal(quickscorer.load(path).predict(X), model.predict(X))


def test_mutated_files_never_crash_and_every_refusal_names_its_place():
    """benchmarks/fuzz_model_file.py in a child process (this process's working folder and
    path, so that it imports the quickscorer under test): a crash fails this test."""
    args = ["--files", "1000", "--seed", "11"]
    if capi_library():        # each file opened and scored by the C library too
        args.append("--c-library")
    out = subprocess.run([sys.executable, "-m", "benchmarks.fuzz_model_file", *args],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("files 1000:") and "unnamed 0" in last, out.stdout[-2000:]


def capi_library() -> bool:
    """Whether this build has the C library (every POSIX build: setup.py)."""
    if sys.platform == "win32":
        return False
    capi.library_path()           # FileNotFoundError: a POSIX build without it is broken
    return True


def test_the_description_is_json_naming_every_section():
    good = model_file.to_bytes(quickscorer.Model(
        random_ensemble(np.random.default_rng(6), "plain")))
    meta, arrays = model_file.unpack(good)
    assert json.loads(json.dumps(meta)) == meta
    assert len(meta["arrays"]) == len(arrays)
    assert all(np.dtype(d).str == d for _, d, _ in meta["arrays"])


def test_equal_arrays_are_written_once():
    """Two arrays of one type, shape and bytes are one section; a zero's sign, a type or a
    shape makes them two."""
    enc = model_file._Encoder()
    zeros = np.zeros(1000, np.int64)
    first = enc.section(zeros, "a")
    assert enc.section(np.zeros(1000, np.int64), "b") == first
    assert enc.section(np.zeros(1000, np.float64), "c") != first
    negative = np.zeros(1000, np.float64)
    negative[7] = -0.0
    assert enc.section(negative, "d") != enc.section(np.zeros(1000, np.float64), "e")
    assert enc.section(np.zeros((500, 2), np.int64), "f") != first
    assert [name for name, _ in enc.arrays] == ["a", "c", "d", "f"]


def test_the_sections_views_are_the_arrays_the_loop_reads():
    """_qsm.views (every section's view at once, in C) and model_file._array (the loop that
    names a fault) give the same arrays: type, shape, bytes, read-only, in the file's
    memory; and a spec the views cannot take leaves the naming to the loop."""
    from quickscorer import _qsm
    model = quickscorer.Model(random_ensemble(np.random.default_rng(11), "lightgbm",
                                              p_categorical=0.2))
    meta, arrays = model_file.unpack(model_file.to_bytes(model))
    # and arrays of two and three dimensions, which no layout of this model holds
    grid = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    meta["arrays"] += [["grid", "<f4", [2, 3, 4]], ["pairs", "<i8", [5, 2]],
                       ["none", "<u2", [0, 3]]]
    good = model_file.pack(meta, [*arrays, grid, np.arange(10).reshape(5, 2),
                                  np.zeros((0, 3), np.uint16)])
    data = np.frombuffer(good, np.uint8)
    sections = _qsm.check(data, True)
    meta = model_file._description(good, sections)
    views = _qsm.views(data, sections, meta["arrays"], model_file._VIEW_DTYPES)
    names = [spec[0] for spec in meta["arrays"]]
    assert len(views) == len(sections) and views[0] is None
    shapes = set()
    for s in range(1, len(sections)):
        want = model_file._array(good, s, sections[s], meta["arrays"][s - 1], names)
        got = views[s]
        assert got.dtype == want.dtype and got.shape == want.shape, names[s - 1]
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
        assert not got.flags.writeable and got.flags.c_contiguous and got.flags.aligned
        if got.size:
            assert np.shares_memory(got, data)
        shapes.add((got.ndim, got.size == 0))
    assert {(1, True), (1, False), (2, True), (2, False), (3, False)} <= shapes
    assert np.array_equal(views[-3], grid)
    for bad in (["x", "<f2", [1]], ["x", "<i4", [True]], ["x", "<i4", [-1]], ["x", "<i4"],
                ["x", "<i4", [2 ** 62]], ["x", "<i4", []], ("x", "<i4", [1])):
        specs = list(meta["arrays"])
        specs[0] = bad
        assert _qsm.views(data, sections, specs, model_file._VIEW_DTYPES) is None
    specs = list(meta["arrays"])
    specs[0] = [specs[0][0], specs[0][1], [specs[0][2][0] + 1]]     # one value too many
    assert _qsm.views(data, sections, specs, model_file._VIEW_DTYPES) is None


def test_a_walk_record_of_other_trees_than_the_ensemble_s_is_refused():
    """The walk's record names its own trees' offsets (the ensemble's section, as written):
    a description that points them elsewhere, so that the table's check would bound a leaf
    by a tree's nodes the ensemble does not have, is refused at the call that needs the
    walk, never walked."""
    tuning = quickscorer.current_tuning().replace(walk_complete=False, walk_min_ratio=0.0)
    model = quickscorer.load(Path(__file__).parent / "legacy" / "lightgbm-2.1.2" /
                             "categorical.txt", tuning=tuning)
    meta, arrays = model_file.unpack(model_file.to_bytes(model, tuning))
    key = next(k for k in meta["records"] if k.startswith("walk_arrays"))
    offsets = arrays[meta["records"][key]["node_offset"]["$a"] - 1].copy()
    offsets[1:-1] = offsets[:-2]          # tree 0 empty, the last tree with two trees' nodes
    meta["records"][key]["node_offset"] = {"$a": len(arrays) + 1}
    meta["arrays"].append(["hostile offsets", "<i8", [offsets.shape[0]]])
    opened = quickscorer.load(model_file.pack(meta, [*arrays, offsets]), tuning=tuning)
    with pytest.raises((ModelFileError, ValueError), match="node_offset"):
        opened.predict(np.zeros((1, opened.n_features)), algorithm="walk")
