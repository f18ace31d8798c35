"""Mutated prepared model files (``.qsm``), opened and scored: each must be refused with an
error naming what is at fault, or score; none may crash, hang or read out of bounds.

    python -m benchmarks.fuzz_model_file                  # 1,000 files
    python -m benchmarks.fuzz_model_file --files 5000 --seed 7
    python -m benchmarks.fuzz_model_file --c-library     # the C library opens each file too

The files are mutations of four small prepared models (a LightGBM-family one with categorical
and missing-value splits, an XGBoost-family one of two outputs, one of deep numeric trees
whose RapidScorer layout has the gathered walk's records, and one with node covers whose
one-row walk the C library reads from the file; each opened with the tuning it was compiled
with), five kinds in turn:

* ``byte``: a byte of the file set to a random value (the checksums catch it, or it lies in
  the padding between sections that nothing reads);
* ``truncate``: the file cut short;
* ``array``: values of one array section replaced (small and huge integers, NaN, infinities,
  other values of the array), the checksums written anew: what a hostile file is;
* ``description``: one field of the JSON description changed (a shape, a dtype, a section
  reference, a number of the ensemble, a record's key), checksums anew;
* ``records``: two prepared layouts' records swapped, checksums anew.

Each file is opened with ``quickscorer.load`` and, where that succeeds, scored through the
default path at 1, 3, 40 and 300 rows on one and two threads, and its exit leaves read; with
``--c-library``, opened and scored by the C library (libquickscorer) as well, on its own. The
last line: ``files F: refused R, scored S, crashed 0``. Every refusal is a ``ValueError``
(``ModelFileError`` for the file's own checks, ``ModelFormatError`` for the trees), and its
message is printed where it names no section, field or layout. The suite runs it in a
child process (tests/test_model_file.py), so that a crash fails the test instead of the run.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys

import numpy as np

import quickscorer
from quickscorer import capi, model_file
from quickscorer.errors import ModelFileError, ModelFormatError
from quickscorer.ir import MISSING_NAN, Ensemble, build_tree

KINDS = ("byte", "truncate", "array", "description", "records")
#: words a refusal names what is at fault with
#: the deep model's tuning: its layout has the gathered walk's fields whatever their cost
GATHERED = quickscorer.current_tuning().replace(rs_gathered=True)
WALKED = quickscorer.current_tuning().replace(walk_complete=False, walk_min_ratio=0.0)
#: and the complete model's: its one-row walk lays the trees out complete
COMPLETE = quickscorer.current_tuning().replace(walk_complete=True, walk_min_ratio=0.0,
                                                group_few_rows_ratio=0.0)
NAMED = ("section", "field", "layout", "tree", "record", "trees", "ensemble", "truncated",
         "magic", "version", "header", "table", "checksum", "feature", "description")


def _tree(rng, n_leaves: int, n_features: int, family: str, numeric: bool = False,
          covers: bool = False):
    """A random tree (a random leaf split each time); ``numeric``: no categorical split;
    ``covers``: node covers (which let the one-row call walk the trees)."""
    left, right, leaves = [-1], [-1], [0]
    while len(leaves) < n_leaves:
        leaf = leaves.pop(int(rng.integers(len(leaves))))
        a = len(left)
        left[leaf], right[leaf] = a, a + 1
        left += [-1, -1]
        right += [-1, -1]
        leaves += [a, a + 1]
    k = len(left)
    cat = rng.random(k) < (0.2 if family == "lightgbm" and not numeric else 0.0)
    missing = rng.integers(3, size=k) if family == "lightgbm" else np.full(k, MISSING_NAN)
    return build_tree(left=left, right=right, root=0, feature=rng.integers(n_features, size=k),
                      threshold=np.round(rng.normal(size=k), 2), default_left=rng.random(k) < .5,
                      missing_type=missing, is_categorical=cat,
                      categories={i: rng.choice(40, size=3, replace=False)
                                  for i in range(k) if cat[i]},
                      value=np.round(rng.normal(size=k), 3), n_features=n_features,
                      cover=rng.integers(1, 100, size=k).astype(float) if covers else None)


def models(seed: int = 0) -> list[quickscorer.Model]:
    """The five small models whose files are mutated: the last two with covers and a walk
    for one row that the C library reads from the file (its index's walk part), the last
    one's trees laid out complete."""
    rng = np.random.default_rng(seed)
    out = []
    for family, n_outputs, n_trees, deep, tuning in (("lightgbm", 1, 24, False, None),
                                                     ("xgboost", 2, 24, False, None),
                                                     ("lightgbm", 1, 12, True, GATHERED),
                                                     ("lightgbm", 1, 16, False, WALKED),
                                                     ("xgboost", 1, 16, False, COMPLETE)):
        trees = [_tree(rng, 200 if deep else int(rng.integers(2, 17 if tuning is COMPLETE
                                                               else 33)), 6, family, deep,
                       covers=tuning in (WALKED, COMPLETE)) for _ in range(n_trees)]
        out.append(quickscorer.Model(Ensemble(
            trees=trees, tree_group=np.arange(n_trees) % n_outputs, n_outputs=n_outputs,
            n_features=6, family=family, base_score=np.zeros(n_outputs)), tuning=tuning))
    return out


def _mutate_array(rng, a: np.ndarray) -> np.ndarray:
    """``a`` with a few values replaced by extremes, off-by-ones and its own other values."""
    a = a.copy()
    if a.size == 0:
        return np.zeros(int(rng.integers(1, 4)), a.dtype)
    flat = a.reshape(-1)
    k = int(rng.integers(1, min(4, flat.size) + 1))
    for at in rng.integers(flat.size, size=k):
        if a.dtype.kind == "f":
            flat[at] = rng.choice([np.nan, np.inf, -np.inf, 1e300, -1.0, 0.0])
        elif a.dtype.kind == "b":
            flat.view(np.uint8)[at] = int(rng.integers(2, 256))
        else:
            info = np.iinfo(a.dtype)
            pick = [info.min, info.max, -1, 0, 1, flat.size, flat.size + 1,
                    int(flat[rng.integers(flat.size)]) + int(rng.choice([-1, 1]))]
            flat[at] = int(np.clip(pick[int(rng.integers(len(pick)))], info.min, info.max))
    return a


def _walk(v, path=()):
    """Every (path, value) of a JSON value's leaves and containers."""
    yield path, v
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _walk(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _walk(x, path + (i,))


def _set(meta, path, value):
    for k in path[:-1]:
        meta = meta[k]
    meta[path[-1]] = value


def _mutate_description(rng, meta: dict) -> str:
    spots = [(p, v) for p, v in _walk(meta) if p]
    path, v = spots[int(rng.integers(len(spots)))]
    if isinstance(v, bool):
        new = not v
    elif isinstance(v, int):
        new = int(rng.choice([v + 1, v - 1, -1, 0, 2 ** 40, v * 2]))
    elif isinstance(v, float):
        new = float(rng.choice([np.nan, -v, 1e308, 0.0]))
    elif isinstance(v, str):
        new = str(rng.choice(["", "<f8", "|u1", "<i4", "xgboost", "plain", v + "x"]))
    elif isinstance(v, list):
        new = v[:-1] if v and rng.random() < .5 else v + v[:1]
    elif isinstance(v, dict):
        new = {} if rng.random() < .3 else {**v, "unknown": 1}
    else:
        new = 1
    _set(meta, path, new)
    return "/".join(map(str, path))


def mutant(rng, good: bytes, meta: dict, arrays: list, kind: str) -> tuple[bytes, str]:
    """One mutation of kind ``kind`` of the file ``good`` (description ``meta`` and
    ``arrays``, as ``model_file.unpack`` gives them) and what it changed."""
    if kind == "byte":
        data = bytearray(good)
        i = int(rng.integers(len(data)))
        data[i] = int(rng.integers(256))
        return bytes(data), f"byte {i}"
    if kind == "truncate":
        n = int(rng.integers(len(good)))
        return good[:n], f"{n} bytes"
    meta = json.loads(json.dumps(meta))
    arrays = list(arrays)
    if kind == "array":
        s = int(rng.integers(len(arrays)))
        arrays[s] = _mutate_array(rng, arrays[s])
        meta["arrays"][s][2] = list(arrays[s].shape)
        what = f"section {s + 1} ({meta['arrays'][s][0]})"
    elif kind == "description":
        what = _mutate_description(rng, meta)
    else:
        keys = sorted(meta["records"])
        a, b = rng.choice(len(keys), size=2, replace=len(keys) < 2)
        ka, kb = keys[int(a)], keys[int(b)]
        meta["records"][ka], meta["records"][kb] = meta["records"][kb], meta["records"][ka]
        what = f"{ka} <-> {kb}"
    try:
        return model_file.pack(meta, arrays), what
    except (TypeError, ValueError, OverflowError):   # a description json cannot write
        return good, what + " (unwritable: the file unchanged)"


#: the widest rows the scoring makes (a mutated width can claim 2^31 features: such a model
#: opens, and is not scored here)
MAX_WIDTH = 1 << 16


def score(model) -> None:
    if model.n_features > MAX_WIDTH:
        return
    rng = np.random.default_rng(1)
    for rows in (1, 3, 40, 300):
        X = rng.standard_normal((rows, model.n_features)) * 2
        X[rng.random(X.shape) < 0.1] = np.nan
        for n_threads in (1, 2):
            model.predict(X, n_threads=n_threads)
        model.predict_leaf(X)


def score_c(data: bytes) -> None:
    """The file opened and scored by the C library (quickscorer.capi), as a C service would."""
    with capi.CModel(data) as c:
        if c.n_features > MAX_WIDTH:
            return
        rng = np.random.default_rng(1)
        for rows in (1, 3, 40):
            X = rng.standard_normal((rows, c.n_features)) * 2
            X[rng.random(X.shape) < 0.1] = np.nan
            c.predict(X)
            c.predict(X.astype(np.float32), raw_score=True, n_threads=2)
            c.predict_leaf(X)


def _refused(counts: collections.Counter, key: str, exc: Exception, where: str) -> None:
    """Count a refusal under ``key``, and as unnamed (printed) where its message names no
    place at fault."""
    counts[key] += 1
    if not any(w in str(exc) for w in NAMED):
        counts["unnamed"] += 1
        print(f"{where} without naming what: {type(exc).__name__}: {exc}", flush=True)


def run(files: int, seed: int, verbose: bool = False, separate: bool = False,
        c_library: bool = False) -> collections.Counter:
    rng = np.random.default_rng(seed)
    bases = []
    for m in models(seed):
        good = model_file.to_bytes(m)
        bases.append((good, m.tuning, *model_file.unpack(good)))
    counts: collections.Counter = collections.Counter()
    for i in range(files):
        good, tuning, meta, arrays = bases[i % len(bases)]
        kind = KINDS[(i // len(bases)) % len(KINDS)]
        data, what = mutant(rng, good, meta, arrays, kind)
        if verbose:
            print(f"file {i}: {kind} {what}", flush=True)
        try:
            if separate:      # every array its own allocation (for a memory checker)
                model = quickscorer.Model(model_file.open_bytes(data, separate=True).ensemble,
                                          tuning=tuning)
            else:
                model = quickscorer.load(data, tuning=tuning)
            score(model)
        except (ModelFileError, ModelFormatError, ValueError) as exc:
            counts[f"refused {kind}"] += 1
            _refused(counts, "refused", exc, f"file {i} ({kind} {what}): refused")
        else:
            counts["scored"] += 1
            counts[f"scored {kind}"] += 1
        if not c_library:
            continue
        try:
            score_c(data)
        except (ModelFileError, ValueError, RuntimeError) as exc:
            _refused(counts, "c refused", exc,
                     f"file {i} ({kind} {what}): the C library refused it")
        else:
            counts["c scored"] += 1
    return counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--verbose", action="store_true", help="print each mutation before it runs")
    p.add_argument("--separate", action="store_true",
                   help="copy each array of a file into an allocation of its own, so that "
                        "AddressSanitizer sees a read past one (LD_PRELOAD=libasan.so, on a "
                        "build with CFLAGS=-fsanitize=address)")
    p.add_argument("--c-library", action="store_true",
                   help="open and score each file through the C library too (libquickscorer, "
                        "by quickscorer.capi)")
    args = p.parse_args(argv)
    counts = run(args.files, args.seed, args.verbose, args.separate, args.c_library)
    for kind in KINDS:
        print(f"{kind}: refused {counts[f'refused {kind}']}, scored {counts[f'scored {kind}']}")
    if args.c_library:
        print(f"C library: refused {counts['c refused']}, scored {counts['c scored']}")
    print(f"files {args.files}: refused {counts['refused']}, scored {counts['scored']}, "
          f"unnamed {counts['unnamed']}, crashed 0")
    return 1 if counts["unnamed"] else 0


if __name__ == "__main__":
    sys.exit(main())
