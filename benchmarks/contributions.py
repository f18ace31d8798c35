"""SHAP contributions: ``Model.contributions`` against the explainers people use instead, on
the matrix's model shapes (``--shapes`` as ``benchmarks.matrix`` names them).

Peers, timed interleaved in one process on the same rows, each on one thread unless
``--threads`` says otherwise: the source library's own (LightGBM ``pred_contrib``, XGBoost
``pred_contribs``, CatBoost ``ShapValues``), ``shap.TreeExplainer``, FastTreeSHAP (its
automatic choice of v1 or v2; it calls ``np.obj2sctype``, which NumPy 2 removed, so the
benchmark restores that function for it) and Intel oneDAL's model builders
(``pred_contribs``; LightGBM and XGBoost models). A peer that is not installed or refuses
the model is named in the report.

    python -m benchmarks.contributions
    python -m benchmarks.contributions --shapes xgb-depth8-uniform-1000 --batch 1,100
    python -m benchmarks.contributions --interactions --batch 1,8

With ``--interactions``, SHAP interaction values against XGBoost's and oneDAL's
``pred_interactions``, CatBoost's ``ShapInteractionValues`` and shap's and FastTreeSHAP's
``shap_interaction_values`` (LightGBM has none of its own); the peers take seconds a row on
these models, so a timed round is one call of each batch.

With ``--programs``, the layout that stores each tree's program against the one that builds
them per block of rows (the choice ``contributions.stores_programs`` makes per model), both
timed interleaved, with each layout's bytes.

Writes a Markdown table to ``results/contributions-*.md``: microseconds per row, ours against
the fastest peer, the largest deviation of our values from the library's own (relative to the
row's largest contribution), the speed on two threads against one (in brackets, two calls of
one thread each at once against one: what the machine gives two streams), and the layout's
memory against the scoring layouts'.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
import threading
import warnings
from pathlib import Path

import numpy as np

from benchmarks import matrix as M
from quickscorer.bench import interleaved, machine

DEFAULT_SHAPES = ",".join(["full-uniform-1000x64", "full-uniform-1000x31", "ltr-1000x64",
                           "xgb-depth6-uniform-1000", "xgb-depth8-uniform-1000",
                           "cb-d6-uniform-1000"])
HERE = Path(__file__).resolve().parent


def _numpy2_shim() -> None:
    """FastTreeSHAP 0.1.6 calls np.obj2sctype, gone in NumPy 2: its behaviour restored."""
    if hasattr(np, "obj2sctype"):
        return

    def obj2sctype(rep, default=None):
        try:
            return np.dtype(rep).type
        except TypeError:
            return rep if isinstance(rep, type) else default
    np.obj2sctype = obj2sctype


def peers(wl, n_threads: int, inter: bool = False) -> tuple[dict, dict, object]:
    """The explainers that take this workload's model, name -> callable(X) (the source
    library's own first), those that do not, name -> why, and the library's own model.
    ``inter``: their interaction values instead."""
    out, missing = {}, {}
    kind = wl.source or ("xgboost" if str(wl.lgb_path).endswith(".json") else "lightgbm")
    native = None
    if kind == "lightgbm":
        import lightgbm as lgb
        native = lgb.Booster(model_file=str(wl.lgb_path))
        if inter:
            missing["LightGBM"] = "it has no interaction values"
        else:
            out["LightGBM"] = lambda X: native.predict(X, pred_contrib=True,
                                                       num_threads=n_threads)
    elif kind == "xgboost":
        import xgboost as xgb
        native = xgb.Booster(model_file=str(wl.lgb_path))
        native.set_param({"nthread": n_threads})
        key = "pred_interactions" if inter else "pred_contribs"
        out["XGBoost"] = lambda X: native.predict(xgb.DMatrix(X, nthread=n_threads),
                                                  **{key: True})
    else:
        import catboost as cb
        native = cb.CatBoost()
        native.load_model(str(Path(wl.lgb_path).with_suffix(".cbm")))
        what = "ShapInteractionValues" if inter else "ShapValues"
        out["CatBoost"] = lambda X: native.get_feature_importance(
            cb.Pool(X), type=what, thread_count=n_threads)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import shap
            ex = shap.TreeExplainer(native)
            out["shap"] = (lambda X: ex.shap_interaction_values(X)) if inter else \
                (lambda X: ex.shap_values(X, check_additivity=False))
        except Exception as e:
            missing["shap"] = f"{type(e).__name__}: {e}"[:120]
        try:
            _numpy2_shim()
            import fasttreeshap
            fx = fasttreeshap.TreeExplainer(native, algorithm="auto", n_jobs=n_threads)
            out["FastTreeSHAP"] = (lambda X: fx.shap_interaction_values(X)) if inter else \
                (lambda X: fx.shap_values(X, check_additivity=False))
        except Exception as e:
            missing["FastTreeSHAP"] = f"{type(e).__name__}: {e}"[:120]
        try:
            if kind == "catboost":
                raise RuntimeError("its model builders take LightGBM and XGBoost models")
            import daal4py as d4p
            mb = d4p.mb.convert_model(native)
            key = "pred_interactions" if inter else "pred_contribs"
            out["oneDAL"] = lambda X: mb.predict(X, **{key: True})
        except Exception as e:
            missing["oneDAL"] = f"{type(e).__name__}: {e}"[:120]
    return out, missing, native


def _deviation(ours: np.ndarray, theirs: np.ndarray) -> float:
    ours = ours.reshape(ours.shape[0], -1).astype(np.float64)
    theirs = np.asarray(theirs).reshape(ours.shape[0], -1).astype(np.float64)
    scale = np.abs(theirs).max(axis=1, keepdims=True) + 1e-300
    return float((np.abs(ours - theirs) / scale).max())


def run(shape: str, batches: list[int], repeat: int, min_rows: int, n_threads: int,
        inter: bool = False):
    import quickscorer
    wl = M.workload(shape, 2_000)
    model = quickscorer.load(wl.lgb_path)
    found, missing, _ = peers(wl, n_threads, inter)
    probe = np.ascontiguousarray(wl.X[:1])
    for name in list(found):
        if name == next(iter(found)):
            continue                 # the source library's own: its failure is the run's
        try:                         # a peer that takes the model but fails on it is named
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                found[name](probe)
        except Exception as e:
            missing[name] = f"{type(e).__name__}: {e}"[:120]
            del found[name]
    rows = []
    for batch in batches:
        calls = max(1, min_rows // batch)
        slices = [np.ascontiguousarray(wl.X[(k * batch) % (wl.X.shape[0] - batch + 1):]
                                       [:batch]) for k in range(calls)]

        def each(fn):
            def go():
                for s in slices:
                    fn(s)
                return calls * batch
            return go
        ours = each(lambda X: model.contributions(X, n_threads=n_threads,
                                                  interactions=inter))
        names = ["quickscorer"] + list(found)
        t = interleaved([ours] + [each(f) for f in found.values()], repeat)
        us = {n: 1e6 * tm.median for n, tm in zip(names, t)}
        check = slices[0]
        mine = model.contributions(check, interactions=inter)
        native_name = next(iter(found))
        theirs = np.asarray(found[native_name](check))
        F = mine.shape[-1] - 1
        if inter and (wl.source == "catboost" or theirs.shape[-1] == F):
            # CatBoost spreads the bias over its row and column, and shap leaves it out:
            # the features' block only
            mine, theirs = mine[..., :F, :F], theirs[..., :F, :F]
        dev = _deviation(mine, theirs)
        rows.append((batch, us, dev))
    two = None
    if n_threads == 1 and (os.cpu_count() or 1) >= 2:
        X = np.ascontiguousarray(wl.X[:max(64 if inter else 400, batches[-1])])
        halves = (X[:X.shape[0] // 2], X[X.shape[0] // 2:])

        def threads(k):
            return lambda: (model.contributions(X, n_threads=k, interactions=inter),
                            X.shape[0])[1]

        def callers():
            # two calls of one thread each at once: what the machine gives two streams
            ts = [threading.Thread(target=model.contributions, args=(h,),
                                   kwargs={"interactions": inter}) for h in halves]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            return X.shape[0]
        t = interleaved([threads(1), threads(2), callers], repeat)
        two = (t[0].median / t[1].median, t[0].median / t[2].median)
    model.predict(wl.X[:1])
    model.predict(wl.X[:1000])
    mem = model.memory()["bytes"]
    scoring = sum(v for k, v in mem.items() if k not in ("ensemble", "contributions"))
    return wl, rows, missing, two, mem.get("contributions", 0), scoring, mem["ensemble"]


def programs(shape: str, batches: list[int], repeat: int, min_rows: int) -> list[str]:
    """Table rows: us/row with the programs stored and built per block, on one thread, and
    each layout's bytes beyond the ensemble's."""
    import quickscorer
    from quickscorer.algorithms import cpu
    from quickscorer.explain import _shap
    from quickscorer.explain import contributions as C
    wl = M.workload(shape, 2_000)
    e = quickscorer.load(wl.lgb_path).ensemble
    width = e.n_outputs * (e.n_features + 1)
    isa = cpu.isa_code(None)
    lays, size = [], []
    for stored in (True, False):
        a = C.shap_arrays(e, stored)
        lays.append(_shap.ShapLayout(a, C.FAMILY_CODES[e.family], e.n_features,
                                     e.n_outputs))
        size.append(sum(v.nbytes for v in a.values() if isinstance(v, np.ndarray)
                        and not any(np.shares_memory(v, b) for b in e.trees.arrays.values()
                                    if isinstance(b, np.ndarray))))
    out = []
    for batch in batches:
        calls = max(1, min_rows // batch)
        slices = [np.ascontiguousarray(wl.X[(k * batch) % (wl.X.shape[0] - batch + 1):]
                                       [:batch]) for k in range(calls)]
        buf = np.empty((batch, width))
        none = np.empty((0, width), np.float32)

        def each(lay):
            def go():
                for X in slices:
                    lay.contributions(X, buf, none, 0, 1, isa, False)
                return calls * batch
            return go
        t = interleaved([each(lay) for lay in lays], repeat)
        us = [1e6 * tm.median for tm in t]
        out.append(f"| {wl.name} | {batch} | {us[0]:,.1f} | {us[1]:,.1f} | "
                   f"{us[1] / us[0]:.3f} | {size[0] / 1e6:.2f} MB | {size[1] / 1e6:.2f} MB |")
        print(out[-1], flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=DEFAULT_SHAPES)
    ap.add_argument("--batch", default="1,100")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--min-rows", type=int, default=200,
                    help="rows a timed round explains (calls of a batch repeated)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--interactions", action="store_true",
                    help="interaction values rather than contributions")
    ap.add_argument("--programs", action="store_true",
                    help="the programs stored against built per block (ours alone)")
    args = ap.parse_args(argv)
    if args.programs:
        return main_programs(args, argv)
    if args.interactions and "--min-rows" not in " ".join(argv or sys.argv[1:]):
        args.min_rows = 1
    batches = [int(b) for b in args.batch.split(",")]
    stamp = _dt.datetime.now()
    title = "Interaction values" if args.interactions else "Contributions"
    lines = [f"# {title}, {stamp:%Y-%m-%d %H:%M}", "",
             f"Machine: {machine()}; {M.cpu_flags()}.", "",
             f"`python -m benchmarks.contributions {' '.join(argv or sys.argv[1:])}`", "",
             "| model | rows a call | ours, us/row | fastest peer, us/row | ours vs it | "
             "every peer, us/row | our deviation | 2 threads | layout / scoring layouts |",
             "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |"]
    notes = []
    for shape in args.shapes.split(","):
        wl, rows, missing, two, mem, scoring, ens = run(shape, batches, args.repeat,
                                                         args.min_rows, args.threads,
                                                         args.interactions)
        for batch, us, dev in rows:
            peer = min((v, k) for k, v in us.items() if k != "quickscorer")
            ratio = peer[0] / us["quickscorer"]
            every = ", ".join(f"{k} {v:,.1f}" for k, v in us.items() if k != "quickscorer")
            lines.append(f"| {wl.name} | {batch} | {us['quickscorer']:,.1f} | "
                         f"{peer[1]} {peer[0]:,.1f} | {ratio:.2f}x | {every} | {dev:.1e} | "
                         f"{'' if two is None else f'{two[0]:.2f}x ({two[1]:.2f}x)'} | "
                         f"{mem / 1e6:.1f} MB / {scoring / 1e6:.1f} MB |")
            print(lines[-1], flush=True)
        for k, why in missing.items():
            notes.append(f"- {wl.name}: {k} left out ({why}).")
    lines += [""] + notes
    kind = "interactions" if args.interactions else "contributions"
    out = HERE / "results" / f"{kind}-{stamp:%Y%m%d-%H%M%S}.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


def main_programs(args, argv) -> int:
    stamp = _dt.datetime.now()
    lines = [f"# Contributions' programs, stored or built per block, {stamp:%Y-%m-%d %H:%M}",
             "", f"Machine: {machine()}; {M.cpu_flags()}.", "",
             f"`python -m benchmarks.contributions {' '.join(argv or sys.argv[1:])}`", "",
             "| model | rows a call | stored, us/row | built, us/row | built / stored | "
             "layout, stored | layout, built |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for shape in args.shapes.split(","):
        lines += programs(shape, [int(b) for b in args.batch.split(",")], args.repeat,
                          args.min_rows)
    out = HERE / "results" / f"programs-{stamp:%Y%m%d-%H%M%S}.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
