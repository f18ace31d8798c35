"""The C parser of XGBoost JSON models (``_xgbjson.parse_model``, reached through
``load_xgboost``) against the document path (orjson or json, then ``packed_trees_fast`` or the
per-tree reference): the same Ensemble on every model the parser takes, the same error
message wherever the document path refuses a model, and the numbers read as JSON reads them."""
from __future__ import annotations

import json
import mmap

import numpy as np
import pytest
from conftest import DAMAGES, damaged
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_xgboost_fast import assert_same
from test_xgboost_import import BREAKS, CASES, _as_version_1, _break, _doc, _trained

import quickscorer
from quickscorer.errors import ModelFormatError
from quickscorer.importers import _xgbjson
from quickscorer.importers import xgboost as xgb_imp
from quickscorer.ir.ensemble import MAX_NODES_PER_TREE


def _document_path(source):
    """What load_xgboost gives without the C parser."""
    doc, fmt = xgb_imp.xgboost_document(source)
    try:
        return xgb_imp._build(doc, fmt)
    except ModelFormatError:
        raise
    except (ValueError, TypeError, IndexError, KeyError, OverflowError, AttributeError,
            MemoryError, RecursionError) as exc:
        raise ModelFormatError(f"XGBoost model: cannot read it ({type(exc).__name__}: "
                               f"{exc})") from None


def assert_same_ensemble(a, b):
    assert_same(a.trees, b.trees)
    for name in ("n_outputs", "n_features", "family", "transform", "feature_names", "source",
                 "trees_per_iteration"):
        assert getattr(a, name) == getattr(b, name), name
    for name in ("tree_group", "base_score"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.tree_weight is None) == (b.tree_weight is None)
    if a.tree_weight is not None:
        assert np.array_equal(a.tree_weight, b.tree_weight)


def _outcome(fn, source):
    """("model", ensemble) or ("error", message)."""
    try:
        return "model", fn(source)
    except ModelFormatError as exc:
        return "error", str(exc)


def assert_same_outcome(raw: bytes):
    got, ref = _outcome(xgb_imp.load_xgboost, raw), _outcome(_document_path, raw)
    assert got[0] == ref[0], (got, ref)
    if got[0] == "error":
        assert got[1] == ref[1]
    else:
        assert_same_ensemble(got[1], ref[1])


def _raw_models():
    raws = {name: bytes(_trained(name)[0].save_raw("json")) for name in CASES}
    for name in ("reg:squarederror", "binary:logistic", "dart"):   # XGBoost 1.x layout
        raws[f"{name}-v1"] = json.dumps(_as_version_1(_doc(name))).encode()
    # indented, with a byte-order mark and CRLF line ends
    raws["indented"] = (b"\xef\xbb\xbf" + json.dumps(_doc("binary:logistic"), indent=2)
                        .replace("\n", "\r\n").encode())
    return raws


RAW = _raw_models()
#: models the parser leaves to the document path: categorical splits
DECLINED = {"categorical", "categorical_onehot"}


@pytest.mark.parametrize("name", sorted(RAW))
def test_parser_gives_the_document_path_ensemble(name):
    fast = xgb_imp._load_json_fast(RAW[name])
    ref = _document_path(RAW[name])
    if name in DECLINED:
        assert fast is None
        return
    assert fast is not None
    assert_same_ensemble(fast, ref)


def test_every_json_source_form_takes_the_parser(tmp_path):
    raw = RAW["multi:softprob"]
    path = tmp_path / "model.json"
    path.write_bytes(raw)
    ref = _document_path(raw)
    with open(path, "rb") as fh:
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    for source in (raw, bytearray(raw), raw.decode(), path, str(path), mapped):
        fast = xgb_imp._load_json_fast(source)
        assert fast is not None, type(source)
        assert_same_ensemble(fast, ref)
    mapped.close()
    assert_same_ensemble(quickscorer.load_ensemble(path), ref)
    # UBJSON and the legacy binary format are not JSON: the parser is not asked
    assert xgb_imp._load_json_fast(bytes(_trained("multi:softprob")[0].save_raw("ubj"))) is None


def test_a_file_longer_than_the_release_steps_is_read_whole(tmp_path):
    """More than two release steps (1 MiB each) of trees, mapped: with the pages read handed
    back as it goes, the parser still reads every tree as the document path does."""
    doc = _doc("reg:squarederror")
    model = doc["learner"]["gradient_booster"]["model"]
    trees = model["trees"]
    copies = 2 + (3 << 20) // len(json.dumps(trees))
    model["trees"] = [dict(t, id=i) for i, t in enumerate(trees * copies)]
    model["tree_info"] = [0] * len(model["trees"])
    model["iteration_indptr"] = list(range(len(model["trees"]) + 1))
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    assert path.stat().st_size > 3 << 20
    fast = xgb_imp._load_json_fast(path)
    assert fast is not None and fast.n_trees == len(trees) * copies
    assert_same_ensemble(fast, _document_path(path.read_bytes()))


@pytest.mark.parametrize("how", BREAKS)
def test_damaged_documents_give_the_document_path_message(how):
    assert_same_outcome(json.dumps(_break(how)).encode())


TREE_DAMAGE = {
    "float_in_int_array": lambda t: t["left_children"].__setitem__(0, 1.0),
    "bool_in_float_array": lambda t: t["split_conditions"].__setitem__(0, True),
    "huge_int": lambda t: t["split_indices"].__setitem__(0, 10**30),
    "deleted_node": lambda t: (t["split_indices"].__setitem__(t["left_children"].index(-1),
                                                              2**31 - 1),
                               t["default_left"].__setitem__(t["left_children"].index(-1), 1)),
    "nan_condition": lambda t: t["split_conditions"].__setitem__(0, float("nan")),
    "overflowing_condition": lambda t: t["split_conditions"].__setitem__(0, 1e39),
    "missing_field": lambda t: t.pop("right_children"),
    "field_not_array": lambda t: t.__setitem__("split_indices", 3),
    "empty_tree": lambda t: [t.__setitem__(k, []) for k in (
        "left_children", "right_children", "split_indices", "split_conditions", "default_left",
        "split_type", "parents", "base_weights", "loss_changes", "sum_hessian")],
    "tree_param_not_object": lambda t: t.__setitem__("tree_param", "x"),
    "vector_leaf": lambda t: t["tree_param"].__setitem__("size_leaf_vector", "2"),
    "skipped_field_damaged": lambda t: t["base_weights"].__setitem__(0, "x"),
    "default_left_2": lambda t: t["default_left"].__setitem__(0, 2),
}


@pytest.mark.parametrize("how", sorted(TREE_DAMAGE))
def test_damaged_trees_give_the_document_path_outcome(how):
    doc = _doc("reg:squarederror")
    TREE_DAMAGE[how](doc["learner"]["gradient_booster"]["model"]["trees"][3])
    assert_same_outcome(json.dumps(doc).encode())


def test_a_tree_that_is_not_an_object_and_a_second_trees_list():
    doc = _doc("reg:squarederror")
    doc["learner"]["gradient_booster"]["model"]["trees"][1] = [1, 2]
    assert_same_outcome(json.dumps(doc).encode())
    doc = _doc("reg:squarederror")
    doc["learner"]["attributes"]["trees"] = []
    raw = json.dumps(doc).encode()
    assert xgb_imp._load_json_fast(raw) is None
    assert_same_outcome(raw)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pos=st.floats(0, 1, exclude_max=True), kind=st.sampled_from(DAMAGES + ["token"]),
       byte=st.integers(0, 255), which=st.sampled_from(["reg:squarederror", "indented"]))
def test_random_damage_gives_the_document_path_outcome(pos, kind, byte, which):
    raw = RAW[which]
    if kind == "token":      # a byte set to one that JSON gives a meaning
        tokens = b'{}[]",:-+.eE0123456789 tfn\\'
        kind, byte = "byte", tokens[byte % len(tokens)]
    assert_same_outcome(bytes(damaged(raw, pos, kind, byte)))


NUMBERS = ["0", "-0", "0.0", "-0.0", "1", "-1", "0.1", "0.3243998", "1.4478782E-9", "1e-45",
           "1.4e-45", "7e-46", "3.4028235e38", "3.4028236e38", "3.40282357e38", "1E400",
           "-1e400", "4.9e-324", "2.2250738585072011e-308", "123456789012345678",
           "1234567890123456789", "99999999999999999999999", "1.00000000000000000001",
           "0.000001234567890123456789", "9007199254740993", "9007199254740993.0",
           "1e22", "1e23", "123456789012345e-22", "1234567890123456e-22", "5e-324",
           "0." + "0" * 70 + "1", "1" + "0" * 70 + ".5", "1e000000000000000001",
           "0.1e-999999999999", "179769313486231580793728971405301e276"]


def test_numbers_are_read_as_json_reads_them():
    """Every number of a document as ``json`` reads it (floats correctly rounded, integers
    exact), and the split conditions as float32 of that float64."""
    body = ", ".join(NUMBERS)
    doc = _xgbjson.parse_model(('{"x": [' + body + '], "trees": []}').encode(),
                               MAX_NODES_PER_TREE)[0]
    want = json.loads(f"[{body}]")
    assert [type(v) for v in doc["x"]] == [type(v) for v in want]
    assert [repr(v) for v in doc["x"]] == [repr(v) for v in want]
    # one leaf per tree: its value is the float32 of the condition
    with np.errstate(over="ignore"):
        finite = [s for s, v in zip(NUMBERS, want) if abs(np.float32(float(v))) < np.inf]
    trees = ", ".join('{"left_children": [-1], "right_children": [-1], "split_indices": [0], '
                      '"default_left": [0], "split_conditions": [' + s + ']}' for s in finite)
    doc, _, arrays = _xgbjson.parse_model(('{"trees": [' + trees + ']}').encode(),
                                          MAX_NODES_PER_TREE)
    expect = np.array([np.float32(float(v)) for v in json.loads("[" + ", ".join(finite) + "]")],
                      np.float32).astype(np.float64)
    assert arrays["leaf_value"].tobytes() == expect.tobytes()


@pytest.mark.parametrize("text", ['{"a": "caf\\u00e9 \\"q\\" \\\\ \\n", "b": "naïve"}',
                                  '{"a": [true, false, null, {}, []], "b": {"c": -12.5e1}}',
                                  '{"a": "x", "a": "last wins"}'])
def test_strings_and_literals_as_json_reads_them(text):
    raw = '{"trees": [], ' + text[1:]
    got = _xgbjson.parse_model(raw.encode(), MAX_NODES_PER_TREE)
    assert got[0] == json.loads(raw)
    assert _xgbjson.parse_model(text.encode(), MAX_NODES_PER_TREE) is None   # no trees


@pytest.mark.parametrize("raw", [b'{"trees": [], "a": NaN}', b'{"trees": [], "a": 01}',
                                 b'{"trees": [], "a": "\x01"}', b'{"trees": [], "a": "\xff"}',
                                 b'{"trees": [], "a": 1.}', b'{"trees": [], "a": .5}',
                                 b'{"trees": [], "a": +1}', b'{"trees": [],}',
                                 b'{"trees": []} x', b'[]',
                                 b'{"trees": [], "a": ' + b'[' * 300 + b']' * 300 + b'}',
                                 b'{"trees": [], "a": "\\x"}'])
def test_what_is_not_strict_json_is_declined(raw):
    assert _xgbjson.parse_model(raw, MAX_NODES_PER_TREE) is None
