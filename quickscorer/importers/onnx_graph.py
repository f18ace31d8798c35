"""The graph around an ONNX tree ensemble: the one ``ai.onnx.ml`` tree ensemble node, the
graph input it reads (through ``Identity`` and float ``Cast`` nodes alone), and a check that
nothing but ``Identity``, float ``Cast``, ``ZipMap`` or a multiplication by ones comes after its
scores; anything else is refused by name (:mod:`~quickscorer.importers.onnx` has the rules).
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelFormatError
from . import protobuf as pb

ML_DOMAIN = "ai.onnx.ml"
ENSEMBLE_OPS = ("TreeEnsembleRegressor", "TreeEnsembleClassifier", "TreeEnsemble")


def find_ensemble(graph: dict) -> dict:
    found = [n for n in graph["nodes"] if n["op_type"] in ENSEMBLE_OPS]
    if not found:
        ops = sorted({n["op_type"] for n in graph["nodes"]})
        raise ModelFormatError(f"ONNX: the graph has no tree ensemble node (its operators: "
                               f"{', '.join(ops) or 'none'})")
    if len(found) > 1:
        raise ModelFormatError(f"ONNX: the graph has {len(found)} tree ensemble nodes; one is "
                               f"read")
    node = found[0]
    if node["domain"] != ML_DOMAIN:
        raise ModelFormatError(f"ONNX: {node['op_type']} is in domain {node['domain']!r}, not "
                               f"{ML_DOMAIN!r}")
    return node


def _producers(graph: dict) -> dict:
    return {out: n for n in graph["nodes"] for out in n["output"]}


def _float_cast(node: dict) -> int | None:
    """The element type a ``Cast`` node casts to."""
    to = node["attributes"].get("to")
    return to if isinstance(to, int) else None


def graph_input(graph: dict, node: dict) -> tuple[int, int | None]:
    """(element type the trees read, the number of features of the graph's input)."""
    if not node["input"]:
        raise ModelFormatError(f"ONNX: {node['op_type']} has no input")
    name = node["input"][0]
    producers = _producers(graph)
    cast_to = None
    seen = 0
    while name in producers:
        p = producers[name]
        seen += 1
        if seen > 64:
            raise ModelFormatError("ONNX: the graph's input reaches the trees through a cycle")
        if p["op_type"] == "Cast" and _float_cast(p) in (pb.ELEM_FLOAT, pb.ELEM_DOUBLE):
            cast_to = cast_to or _float_cast(p)
        elif p["op_type"] != "Identity":
            raise ModelFormatError(
                f"ONNX: the trees read the output of a {p['op_type']} node; quickscorer reads a "
                f"graph whose input feeds the trees (through Identity or Cast nodes at most)")
        if not p["input"]:
            raise ModelFormatError(f"ONNX: a {p['op_type']} node has no input")
        name = p["input"][0]
    inputs = {v["name"]: v for v in graph["inputs"]}
    if name not in inputs:
        raise ModelFormatError(f"ONNX: the trees read {name!r}, which is not an input of the "
                               f"graph")
    info = inputs[name]
    elem = cast_to or info["elem_type"]
    if elem not in (pb.ELEM_FLOAT, pb.ELEM_DOUBLE):
        raise ModelFormatError(f"ONNX: the input {name!r} has element type {elem}; quickscorer "
                               f"reads float and double inputs")
    shape = info["shape"]
    n_features = None
    if shape is not None and len(shape) == 2 and isinstance(shape[1], int) and shape[1] > 0:
        n_features = shape[1]
    return elem, n_features


_ONES_OPS = ("Mul", "Div")


def check_scores_path(graph: dict, name: str, model: dict) -> None:
    """Refuse a graph that computes on the ensemble's scores (beyond renaming, a float cast,
    ZipMap or a product with ones) before they reach an output."""
    consumers: dict[str, list] = {}
    for n in graph["nodes"]:
        for i in n["input"]:
            consumers.setdefault(i, []).append(n)
    todo, seen = [name], set()
    while todo:
        cur = todo.pop()
        if cur in seen:
            continue
        seen.add(cur)
        for n in consumers.get(cur, []):
            op = n["op_type"]
            ok = op in ("Identity", "ZipMap") or (
                op == "Cast" and _float_cast(n) in (pb.ELEM_FLOAT, pb.ELEM_DOUBLE))
            if op in _ONES_OPS and len(n["input"]) == 2 and n["input"][0] == cur:
                other = n["input"][1]
                span = graph["initializers"].get(other)
                ok = span is not None and bool(
                    np.all(pb.tensor(model["buffer"], *span) == 1))
            if not ok:
                raise ModelFormatError(
                    f"ONNX: the tree ensemble's scores go through a {op} node before the "
                    f"graph's output; quickscorer gives the ensemble's own scores and reads "
                    f"graphs that only rename, cast or ZipMap them")
            todo.extend(n["output"])
