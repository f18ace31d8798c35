"""RankLib's tree ensembles (the Lemur project's Java toolkit): MART, LambdaMART and random
forests of either, in the text RankLib saves (``-save``) and loads (``-load``), which the
Elasticsearch and OpenSearch LTR plugins load as ``model/ranklib``.

The file: ``##`` comment lines (the ranker's name, its training parameters; RankLib reads
nothing of them), then one ``<ensemble>`` (a random forest: one a bag) of ``<tree id
weight>`` elements, each a nest of ``<split>`` elements: an inner one holds ``<feature>``
(numbered from 1) and ``<threshold>`` then its ``pos="left"`` and ``pos="right"`` children, a
leaf holds ``<output>``. A row goes left where ``value <= threshold`` in ``float`` (NaN goes
right); the sum is RankLib's (``ir/sums.py``). The rules, as read in RankLib's source
(``Ensemble``, ``Split``, ``RFRanker``), are in docs/semantics.md.

The text is read by a small tokenizer of exactly these elements (no XML parser, no
entities): any other element or attribute that could change a score is refused by name.
"""
from __future__ import annotations

import re

import numpy as np

from ..errors import ModelFormatError
from ..ir.ensemble import MISSING_NAN, Ensemble, build_tree

#: the tree rankers whose files this reads, by the name on their first line
TREE_RANKERS = {"MART": "MART", "LambdaMART": "LambdaMART", "Random Forests": "RandomForests"}
#: RankLib's other rankers, which are not tree ensembles
OTHER_RANKERS = ("RankNet", "RankBoost", "AdaRank", "Coordinate Ascent", "ListNet",
                 "Linear Regression", "LambdaRank")

_TOKEN = re.compile(rb"<(/?)([A-Za-z]+)((?:\s+[A-Za-z]+\s*=\s*\"[^\"]*\")*)\s*>|([^<]+)")
_ATTR = re.compile(rb"([A-Za-z]+)\s*=\s*\"([^\"]*)\"")


def looks_like_ranklib(raw: bytes) -> bool:
    """Whether the bytes start as a RankLib model file: ``## <ranker>`` then, past the
    comments, ``<ensemble>``."""
    head = raw[:4096].lstrip()
    if not head.startswith(b"##"):
        return False
    body = b"\n".join(line for line in head.splitlines() if not line.lstrip().startswith(b"##"))
    return body.lstrip().startswith(b"<ensemble>") or not body.strip()


def _float(text: bytes, what: str) -> float:
    """A number as Java's ``Float.parseFloat`` reads it: to the nearest float32."""
    try:
        value = float(text.strip())
    except ValueError:
        raise ModelFormatError(f"RankLib model: {what} {text.strip()[:40]!r} is not a number"
                               ) from None
    with np.errstate(over="ignore"):
        f = np.float32(value)
    if not np.isfinite(f):
        raise ModelFormatError(f"RankLib model: {what} {text.strip()[:40]!r} is not finite "
                               f"in float")
    return float(f)


class _Reader:
    """The elements of a model's text, one at a time: ``(closing, name, attributes)`` for a
    tag, ``(None, None, text)`` for the text between tags."""

    def __init__(self, body: bytes):
        self.tokens = [m for m in _TOKEN.finditer(body)
                       if m.group(4) is None or m.group(4).strip()]
        self.at = 0

    def next(self, what: str):
        if self.at >= len(self.tokens):
            raise ModelFormatError(f"RankLib model: the text ends inside {what}")
        m = self.tokens[self.at]
        self.at += 1
        if m.group(4) is not None:
            return None, None, m.group(4)
        attrs = {k.decode(): v.decode(errors="replace") for k, v in _ATTR.findall(m.group(3))}
        return m.group(1) == b"/", m.group(2).decode(), attrs

    def peek(self, what: str):
        """The next element, left to be read."""
        at = self.at
        try:
            return self.next(what)
        finally:
            self.at = at

    def expect(self, closing: bool, name: str, what: str) -> dict:
        got = self.next(what)
        if got[0] is not closing or got[1] != name:
            shown = "text" if got[1] is None else f"<{'/' if got[0] else ''}{got[1]}>"
            raise ModelFormatError(f"RankLib model: {shown} in {what}, where "
                                   f"<{'/' if closing else ''}{name}> belongs")
        return got[2]

    def text(self, name: str, what: str) -> bytes:
        self.expect(False, name, what)
        _, tag, value = self.next(what)
        if tag is not None:
            raise ModelFormatError(f"RankLib model: <{name}> in {what} holds no value")
        self.expect(True, name, what)
        return value


def _tree(r: _Reader, where: str) -> dict:
    """One tree's nodes in source numbering (the importer's preorder), as build_tree reads
    them."""
    nodes = {"left": [], "right": [], "feature": [], "threshold": [], "value": []}

    def split(depth: int) -> int:
        if depth > 4096:
            raise ModelFormatError(f"RankLib model: {where} is nested deeper than 4096 splits")
        n = len(nodes["left"])
        for k in nodes:
            nodes[k].append(-1 if k in ("left", "right") else 0)
        closing, name, _ = r.peek(where)
        if name == "output":
            nodes["value"][n] = _float(r.text("output", where), f"{where}: an output")
        elif name == "feature":
            fid = r.text("feature", where).strip()
            if not fid.isdigit() or int(fid) < 1:
                raise ModelFormatError(f"RankLib model: {where}: feature {fid[:20]!r} is not "
                                       f"a number from 1")
            nodes["feature"][n] = int(fid)
            nodes["threshold"][n] = _float(r.text("threshold", where), f"{where}: a threshold")
            for side, key in (("left", "left"), ("right", "right")):
                attrs = r.expect(False, "split", where)
                if attrs.get("pos") != side or set(attrs) - {"pos"}:
                    raise ModelFormatError(f"RankLib model: {where}: a split's children must "
                                           f"be pos=\"left\" then pos=\"right\", got {attrs}")
                nodes[key][n] = split(depth + 1)
        else:
            shown = "text" if name is None else f"<{'/' if closing else ''}{name}>"
            raise ModelFormatError(f"RankLib model: {where}: {shown} where a split holds "
                                   f"<feature> or <output>")
        r.expect(True, "split", where)
        return n

    r.expect(False, "split", where)
    split(0)
    return nodes


def load_ranklib(data, n_features: int | None = None) -> Ensemble:
    """The ensemble of a RankLib model's text (str or bytes). ``n_features``: the columns a
    row gives (default: the largest feature number the trees read); feature ``k`` reads
    column ``k - 1``."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    lines = raw.splitlines()
    comments = [ln.strip()[2:].strip() for ln in lines if ln.strip().startswith(b"##")]
    ranker = comments[0].decode(errors="replace") if comments else ""
    if ranker in OTHER_RANKERS:
        raise ModelFormatError(f"RankLib's {ranker} is not a tree ensemble; quickscorer reads "
                               f"RankLib's MART, LambdaMART and Random Forests models")
    if ranker not in TREE_RANKERS:
        raise ModelFormatError(f"RankLib model: unknown ranker {ranker[:40]!r} on the first "
                               f"line (known: {', '.join(TREE_RANKERS)})")
    body = b"\n".join(ln for ln in lines if not ln.strip().startswith(b"##"))
    r = _Reader(body)
    trees, weights, bag_starts = [], [], []
    while r.at < len(r.tokens):
        r.expect(False, "ensemble", "the model")
        bag_starts.append(len(trees))
        while True:
            closing, name, attrs = r.next("an ensemble")
            if closing and name == "ensemble":
                break
            if closing or name != "tree":
                raise ModelFormatError(f"RankLib model: <{name}> in an ensemble, where "
                                       f"<tree> belongs")
            unknown = set(attrs) - {"id", "weight"}
            if unknown or "weight" not in attrs:
                raise ModelFormatError(f"RankLib model: tree {attrs.get('id', '?')} has "
                                       f"attributes {sorted(attrs)}: RankLib's trees have an "
                                       f"id and a weight")
            where = f"tree {len(trees) + 1}"
            weights.append(_float(attrs["weight"].encode(), f"{where}: the weight"))
            trees.append(_tree(r, where))
            r.expect(True, "tree", where)
        if bag_starts[-1] == len(trees):
            raise ModelFormatError("RankLib model: an ensemble without trees")
    if not trees:
        raise ModelFormatError("RankLib model: no <ensemble> of trees")
    if ranker != "Random Forests" and len(bag_starts) > 1:
        raise ModelFormatError(f"RankLib model: {len(bag_starts)} ensembles in a {ranker} "
                               f"model (one is RankLib's; several, a random forest's bags)")
    used = max(max(t["feature"]) for t in trees)
    if n_features is None:
        n_features = max(1, used)
    elif used > n_features:
        raise ModelFormatError(f"RankLib model: its trees read feature {used}, past the "
                               f"{n_features} features given")
    built = []
    for i, t in enumerate(trees):
        k = len(t["left"])
        built.append(build_tree(
            left=t["left"], right=t["right"], root=0,
            feature=[f - 1 if t["left"][j] >= 0 else 0 for j, f in enumerate(t["feature"])],
            threshold=t["threshold"], default_left=[False] * k, missing_type=[MISSING_NAN] * k,
            is_categorical=[False] * k, categories=None, value=t["value"],
            n_features=n_features, where=f"tree {i + 1}"))
    bags = ranker == "Random Forests"
    return Ensemble(
        trees=built, tree_group=np.zeros(len(built), np.int32), n_outputs=1,
        n_features=n_features, family="xgboost", base_score=[0.0],
        tree_weight=np.asarray(weights), leaf_sum="ranklib",
        bag_offsets=np.array(bag_starts + [len(built)]) if bags else None,
        feature_id_base=1,
        source={"library": "ranklib", "objective": TREE_RANKERS[ranker], "format": "ranklib",
                "ranker": ranker})
