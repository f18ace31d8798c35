"""XGBoost's legacy binary model format (``save_model("x.model")`` before 2.1) -> the JSON
document XGBoost itself would write for the same model.

The file is the learner's C structs written as they lie in memory, little-endian:

* an optional ``binf`` magic (written by 1.5 to 2.0, as seen here; 0.90 and 1.0.2 do not);
* ``LearnerModelParam``: 136 bytes: ``base_score`` (float32), ``num_feature`` (uint32),
  ``num_class``, ``contain_extra_attrs``, ``contain_eval_metrics``, ``major_version``,
  ``minor_version`` (int32 each; the versions are 0 before 1.0) and reserved words;
* the objective and the booster name, each a uint64 length and its bytes;
* for ``gbtree`` and ``dart``: ``GBTreeModelParam`` (160 bytes: ``num_trees``,
  ``num_parallel_tree`` (1 in files older than the field), ...), then each tree:
  ``TreeParam`` (148 bytes: ``num_nodes``, ``num_deleted``, ``num_feature``,
  ``size_leaf_vector``, ...), ``num_nodes`` nodes of 20 bytes (parent with the is-left bit,
  left, right, split index with the default-left bit, split condition or leaf value) and
  ``num_nodes`` statistics of 16 bytes; then one int32 ``tree_info`` per tree; DART adds its
  ``weight_drop`` (a uint64 count and float32 values);
* with ``contain_extra_attrs``: the attributes (a uint64 count of string pairs). From 1.0 on
  they hold the objective's configuration as JSON (``"objective"``).

Before 1.0, ``base_score`` holds the margin instead of the output-space value; XGBoost 1.0 and
later turn it back with the objective's prediction transform (but for ``multi:``) before
taking its margin again. The document built here does the same, so it loads like the JSON
file that a later XGBoost writes for the same binary file.

Every count and length is checked against the bytes left before anything is read or
allocated: a truncated or damaged file is a :class:`ModelFormatError` naming the field.
"""
from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from .._transforms import apply_transform
from ..errors import ModelFormatError
from ..ir.ensemble import MAX_NODES_PER_TREE

__all__ = ["decode_xgboost_binary", "looks_like_xgboost_binary", "objective_config"]

MAGIC = b"binf"
LEARNER_PARAM_BYTES = 136
GBTREE_PARAM_BYTES = 160
TREE_PARAM_BYTES = 148
NODE = np.dtype([("parent", "<i4"), ("left", "<i4"), ("right", "<i4"), ("sindex", "<u4"),
                 ("info", "<f4")])
STAT = np.dtype([("loss_chg", "<f4"), ("sum_hess", "<f4"), ("base_weight", "<f4"),
                 ("leaf_child_cnt", "<i4")])
assert NODE.itemsize == 20 and STAT.itemsize == 16

#: longest objective / booster name or attribute string we read (a corrupt length, not a name)
MAX_NAME_BYTES = 1 << 12
MAX_ATTRIBUTE_BYTES = 1 << 26
MAX_TREES = 1 << 24
MAX_OUTPUTS = 1 << 16

# The objective's parameter block in XGBoost's JSON, for files that do not carry it (before
# 1.0): today's XGBoost refuses a model without the blocks marked required. Defaults are
# XGBoost's own.
_OBJECTIVE_PARAMS = {
    "multi:softprob": ("softmax_multiclass_param", {"num_class": None}),
    "multi:softmax": ("softmax_multiclass_param", {"num_class": None}),
    "count:poisson": ("poisson_regression_param", {"max_delta_step": "0.699999988"}),
    "reg:tweedie": ("tweedie_regression_param", {"tweedie_variance_power": "1.5"}),
    "reg:pseudohubererror": ("pseudo_huber_param", {"huber_slope": "1"}),
}
#: the objectives whose parameter block is ``reg_loss_param``
_REG_LOSS = frozenset({"reg:squarederror", "reg:squaredlogerror", "reg:logistic",
                       "binary:logistic", "binary:logitraw", "reg:gamma"})
#: names XGBoost has renamed since (same predictions)
_RENAMED = {"reg:linear": "reg:squarederror"}
# the prediction transform of a pre-1.0 base_score, by objective (None: identity)
_PRED_TRANSFORM = {"reg:logistic": "xgb_logistic", "binary:logistic": "xgb_logistic",
                   "count:poisson": "xgb_exp", "reg:gamma": "xgb_exp", "reg:tweedie": "xgb_exp"}

_OBJECTIVE_PREFIXES = (b"reg:", b"binary:", b"multi:", b"rank:", b"count:", b"survival:")


def looks_like_xgboost_binary(data: bytes) -> bool:
    """Whether ``data`` starts like an XGBoost legacy binary model: the ``binf`` magic, or (files
    of XGBoost 0.x) a learner parameter block followed by an objective name."""
    if data[:4] == MAGIC:
        return True
    at = LEARNER_PARAM_BYTES
    if len(data) < at + 8:
        return False
    (n,) = struct.unpack_from("<Q", data, at)
    return 4 <= n <= 64 and bytes(data[at + 8:at + 8 + n]).startswith(_OBJECTIVE_PREFIXES)


class _Reader:
    """Bounds-checked reads from the file's bytes; ``fail`` names the field and offset."""

    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def left(self) -> int:
        return len(self.data) - self.pos

    def fail(self, what: str, why: str):
        raise ModelFormatError(f"XGBoost binary model: {what} (at byte {self.pos}): {why}")

    def take(self, n: int, what: str) -> memoryview:
        if n < 0 or n > self.left():
            self.fail(what, f"needs {n} bytes, {self.left()} left (truncated or damaged file?)")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def ints(self, fmt: str, what: str) -> tuple:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))

    def count(self, what: str, item_bytes: int, limit: int) -> int:
        (n,) = self.ints("<Q", what)
        if n > limit or n * item_bytes > self.left():
            self.fail(what, f"{n} entries of {item_bytes} bytes cannot fit in the "
                            f"{self.left()} bytes left")
        return n

    def string(self, what: str, limit: int = MAX_NAME_BYTES) -> str:
        n = self.count(f"{what} length", 1, limit)
        raw = bytes(self.take(n, what))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.fail(what, f"{raw[:40]!r} is not text")

    def array(self, dtype: np.dtype, n: int, what: str) -> np.ndarray:
        return np.frombuffer(self.take(n * dtype.itemsize, what), dtype=dtype, count=n)


def decode_xgboost_binary(data: bytes) -> tuple[dict, dict]:
    """Decode a legacy binary model into the document XGBoost's JSON format holds for it.

    Returns ``(document, about)``: ``document`` has XGBoost's JSON layout (``learner`` with
    ``learner_model_param``, ``objective``, ``gradient_booster``, ``attributes``; tree arrays
    as numpy arrays); ``about`` says what the file was: ``{"format": "binary", "magic":
    bool, "version": "1.0" or "< 1.0"}``.

    Raises
    ------
    ModelFormatError
        For a truncated or damaged file, naming the field.
    """
    r = _Reader(data)
    magic = bytes(data[:4]) == MAGIC
    if magic:
        r.take(4, "magic")
    (base_score, num_feature, num_class, extra_attrs, _eval_metrics, major, minor
     ) = r.ints("<fIiiiii", "learner parameters")
    r.take(LEARNER_PARAM_BYTES - 28, "learner parameters")
    if not 1 <= num_feature <= (1 << 31) - 1:
        r.fail("num_feature", f"{num_feature} features")
    if not 0 <= num_class <= MAX_OUTPUTS:
        r.fail("num_class", f"{num_class} classes")
    if not 0 <= major < 100 or not 0 <= minor < 1000:
        r.fail("version", f"{major}.{minor} is no XGBoost release")
    if not np.isfinite(base_score):
        r.fail("base_score", f"{base_score} is not finite")
    objective = r.string("objective name")
    booster = r.string("booster name")
    if booster == "gblinear":
        raise ModelFormatError("XGBoost binary model: gblinear (a linear booster) is not a "
                               "tree ensemble")
    if booster not in ("gbtree", "dart"):
        r.fail("booster name", f"unknown gradient booster {booster[:40]!r}")

    model = _gbtree(r, num_feature)
    gradient_booster: dict[str, Any]
    if booster == "dart":
        n_trees = len(model["trees"])
        weights = np.zeros(0, np.float32)
        if n_trees:
            n = r.count("dart weight_drop count", 4, MAX_TREES)
            if n != n_trees:
                r.fail("dart weight_drop", f"{n} weights for {n_trees} trees")
            weights = r.array(np.dtype("<f4"), n, "dart weight_drop").astype(np.float32)
        gradient_booster = {"name": "dart", "gbtree": {"name": "gbtree", "model": model},
                            "weight_drop": weights}
    else:
        gradient_booster = {"name": "gbtree", "model": model}

    attributes: dict[str, str] = {}
    if extra_attrs:
        n = r.count("attribute count", 16, 1 << 20)
        for i in range(n):
            key = r.string(f"attribute {i} name", MAX_ATTRIBUTE_BYTES)
            attributes[key] = r.string(f"attribute {key[:40]!r}", MAX_ATTRIBUTE_BYTES)
    # What may follow (0.x wrote Poisson's max_delta_step and the metric names here) does not
    # take part in prediction.

    obj_config = objective_config(objective, attributes, num_class)
    if major < 1 and not objective.startswith("multi:") and objective in _PRED_TRANSFORM:
        # stored as a margin before 1.0: back to output space, as XGBoost >= 1.0 does
        base = apply_transform(_PRED_TRANSFORM[objective], {},
                               np.array([[base_score]], np.float32))
        base_score = float(base[0, 0])
    document = {
        "learner": {
            "learner_model_param": {
                "base_score": _float32_text(base_score),
                "num_class": str(num_class),
                "num_feature": str(num_feature),
                "num_target": "1",
                "boost_from_average": "0",
            },
            "objective": obj_config,
            "gradient_booster": gradient_booster,
            "attributes": {k: v for k, v in attributes.items()
                           if k not in ("objective", "metrics",
                                        "count_poisson_max_delta_step")},
            "feature_names": [],
            "feature_types": [],
        },
    }
    if major >= 1:
        document["version"] = [major, minor, 0]
    about = {"format": "binary", "magic": magic,
             "version": f"{major}.{minor}" if major >= 1 else "< 1.0"}
    return document, about


def _gbtree(r: _Reader, num_feature: int) -> dict:
    """``GBTreeModelParam``, the trees and ``tree_info``."""
    (num_trees, num_parallel_tree) = r.ints("<ii", "gbtree parameters")
    r.take(GBTREE_PARAM_BYTES - 8, "gbtree parameters")
    smallest_tree = TREE_PARAM_BYTES + NODE.itemsize + STAT.itemsize + 4
    if not 0 <= num_trees <= MAX_TREES or num_trees * smallest_tree > r.left():
        r.fail("num_trees", f"{num_trees} trees cannot fit in the {r.left()} bytes left")
    if num_parallel_tree < 1:
        num_parallel_tree = 1     # files older than the field hold the unused num_roots there
    trees = [_tree(r, t, num_feature) for t in range(num_trees)]
    tree_info = r.array(np.dtype("<i4"), num_trees, "tree_info").astype(np.int64)
    return {
        "gbtree_model_param": {"num_trees": str(num_trees),
                               "num_parallel_tree": str(num_parallel_tree)},
        "trees": trees,
        "tree_info": tree_info,
    }


def _tree(r: _Reader, t: int, num_feature: int) -> dict:
    (_roots, num_nodes, num_deleted, _depth, tree_features, size_leaf_vector
     ) = r.ints("<6i", f"tree {t} parameters")
    r.take(TREE_PARAM_BYTES - 24, f"tree {t} parameters")
    if not 1 <= num_nodes <= MAX_NODES_PER_TREE:
        r.fail(f"tree {t} num_nodes", f"{num_nodes} nodes")
    if num_nodes * (NODE.itemsize + STAT.itemsize) > r.left():
        r.fail(f"tree {t} nodes", f"{num_nodes} nodes cannot fit in the {r.left()} bytes left")
    if not 0 <= num_deleted < num_nodes:
        r.fail(f"tree {t} num_deleted", f"{num_deleted} of {num_nodes} nodes")
    if size_leaf_vector > 1:
        r.fail(f"tree {t} size_leaf_vector", f"vector-leaf trees ({size_leaf_vector}) are not "
                                             f"in this format")
    nodes = r.array(NODE, num_nodes, f"tree {t} nodes")
    stats = r.array(STAT, num_nodes, f"tree {t} node statistics")
    sindex = nodes["sindex"]
    parent = nodes["parent"].view(np.uint32) & np.uint32(0x7FFFFFFF)
    return {
        "tree_param": {"num_nodes": str(num_nodes), "num_deleted": str(num_deleted),
                       "num_feature": str(tree_features if tree_features > 0 else num_feature),
                       "size_leaf_vector": "1"},
        "id": t,
        "left_children": nodes["left"].astype(np.int64),
        "right_children": nodes["right"].astype(np.int64),
        "parents": parent.astype(np.int64),
        "split_indices": (sindex & np.uint32(0x7FFFFFFF)).astype(np.int64),
        "split_conditions": nodes["info"].astype(np.float32),
        "default_left": (sindex >> np.uint32(31)).astype(np.int64),
        "split_type": np.zeros(num_nodes, np.int64),
        "base_weights": stats["base_weight"].astype(np.float32),
        "loss_changes": stats["loss_chg"].astype(np.float32),
        "sum_hessian": stats["sum_hess"].astype(np.float32),
        "categories": np.zeros(0, np.int64),
        "categories_nodes": np.zeros(0, np.int64),
        "categories_segments": np.zeros(0, np.int64),
        "categories_sizes": np.zeros(0, np.int64),
    }


def objective_config(objective: str, attributes: dict[str, str], num_class: int) -> dict:
    """The ``learner.objective`` object of XGBoost's JSON for this objective: the one the file
    saved (attribute ``objective``, XGBoost >= 1.0), else the name with the parameter block
    XGBoost needs, at its defaults (``num_class`` from the model; Poisson's
    ``max_delta_step`` from the 0.x attribute when present)."""
    saved = attributes.get("objective")
    if saved:
        try:
            config = json.loads(saved)
        except (ValueError, RecursionError):
            config = None
        if isinstance(config, dict) and isinstance(config.get("name"), str):
            config["name"] = _RENAMED.get(config["name"], config["name"])
            return config
    name = _RENAMED.get(objective, objective)
    config: dict[str, Any] = {"name": name}
    if name in _OBJECTIVE_PARAMS:
        block, defaults = _OBJECTIVE_PARAMS[name]
        params = {k: (str(num_class) if k == "num_class" else v) for k, v in defaults.items()}
        if name == "count:poisson" and "count_poisson_max_delta_step" in attributes:
            params["max_delta_step"] = attributes["count_poisson_max_delta_step"]
        config[block] = params
    elif name in _REG_LOSS:
        config["reg_loss_param"] = {"scale_pos_weight": "1"}
    return config


def _float32_text(x: float) -> str:
    """The shortest text that reads back as the same float32 (XGBoost's style: ``5E-1``)."""
    return np.format_float_scientific(np.float32(x), unique=True, trim="-",
                                      exp_digits=1).upper().replace("E+", "E")
