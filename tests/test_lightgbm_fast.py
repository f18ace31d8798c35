"""The C tree parser of LightGBM text models (``_lgbtext`` via ``parse_fast``) against the Python
reference parser (``parse_reference``): the same Ensemble, array for array, on every model it
takes, and a refusal (``None``, so that the reference parser names the problem) on every model
the reference refuses."""
from __future__ import annotations

import mmap
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import DAMAGES, damaged
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_lightgbm_import import BREAKS, CASES, _break, _trained

import quickscorer
from quickscorer.cli import demo_files
from quickscorer.errors import ModelFormatError
from quickscorer.importers.lightgbm import map_model_file, parse_fast, parse_reference

LEGACY = Path(__file__).resolve().parent / "legacy"


def assert_same(fast, ref):
    assert fast.n_trees == ref.n_trees
    for name, a in ref.trees.arrays.items():
        b = fast.trees.arrays[name]
        if a is None:
            assert b is None, name
            continue
        assert b is not None and a.dtype == b.dtype and np.array_equal(a, b), name
    for field in ("n_outputs", "n_features", "family", "transform", "transform_params",
                  "average_output", "feature_names", "source", "trees_per_iteration"):
        assert getattr(fast, field) == getattr(ref, field), field
    assert np.array_equal(fast.tree_group, ref.tree_group)
    assert np.array_equal(fast.base_score, ref.base_score)


def _texts():
    out = {f"trained-{name}": _trained(name)[0].model_to_string() for name in CASES}
    out["demo"] = Path(str(demo_files()[0])).read_text()
    for path in sorted(LEGACY.glob("lightgbm-*/*.txt")):
        out[f"{path.parent.name}-{path.stem}"] = path.read_text()
    return out


@pytest.mark.parametrize("name", sorted(_texts()))
def test_fast_parser_gives_the_reference_ensemble(name):
    text = _texts()[name]
    ref = parse_reference(text)
    fast = parse_fast(text.encode())
    if ref.has_categorical or ref.has_linear:
        assert fast is None          # the reference parser reads these
        return
    assert fast is not None, name
    assert_same(fast, ref)
    assert_same(parse_fast(text), ref)      # from a str as well


@pytest.mark.parametrize("how", BREAKS)
def test_fast_parser_declines_what_the_reference_refuses(how):
    text = _trained("regression")[0].model_to_string()
    bad, _ = _break(text, how)
    with pytest.raises(ModelFormatError):
        parse_reference(bad)
    assert parse_fast(bad.encode()) is None


@pytest.mark.parametrize("edit", [
    ("Tree=1\n", "Tree=01\n"), ("Tree=1\n", "Tree=+1\n"), ("Tree=1\n", "Tree= 1 \n"),
    ("num_leaves=", "num_leaves= "), ("\nshrinkage=", "\nshrinkage=1\nshrinkage="),
    ("\nleaf_value=", "\nleaf_value=1e999 "), ("\nthreshold=", "\nthreshold=-inf "),
    ("\nthreshold=", "\nthreshold=inf "), ("\nthreshold=", "\nthreshold=nan "),
    ("\nleaf_value=", "\nleaf_value=.5 "), ("\nleaf_value=", "\nleaf_value=5. "),
    ("\nleaf_value=", "\nleaf_value=1_0 "), ("\nthreshold=", "\nthreshold=0x10 "),
    ("\nsplit_gain=", "\nnot a field\nsplit_gain="), ("end of trees", "feature importances:"),
    ("\ndecision_type=", "\ndecision_type=\t"), ("\nleaf_value=", "\nleaf_value=+1e-400 "),
])
def test_fast_parser_agrees_on_edge_cases(edit):
    text = _trained("binary")[0].model_to_string()
    old, new = edit
    changed = text.replace(old, new, 1)
    try:
        ref = parse_reference(changed)
    except ModelFormatError:
        assert parse_fast(changed.encode()) is None
        return
    fast = parse_fast(changed.encode())
    if fast is not None:
        assert_same(fast, ref)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pos=st.floats(0, 1, exclude_max=True), kind=st.sampled_from(DAMAGES),
       byte=st.sampled_from(list(b"0123456789 .-+eE=\n\r\tinfa_xT") + [0, 200, 0x1c]))
def test_random_damage_fast_path_never_accepts_more(pos, kind, byte):
    raw = damaged(_trained("multiclass")[0].model_to_string().encode(), pos, kind, byte)
    try:
        ref = parse_reference(raw.decode("utf-8"))
    except (ModelFormatError, UnicodeDecodeError):
        assert parse_fast(raw) is None
        return
    fast = parse_fast(raw)
    if fast is not None:
        assert_same(fast, ref)


def _repeated(text: str, copies: int) -> str:
    """A model text holding the trees of ``text`` ``copies`` times (no tree_sizes line)."""
    head, rest = text.split("\nTree=0\n", 1)
    trees_text, tail = rest.split("\nend of trees", 1)
    blocks = [b.strip("\n") for b in ("Tree=0\n" + trees_text).split("\n\n\n") if b.strip()]
    out = [re.sub(r"^Tree=\d+", f"Tree={c * len(blocks) + i}", b)
           for c in range(copies) for i, b in enumerate(blocks)]
    head = re.sub(r"\ntree_sizes=[^\n]*", "", head)
    return head + "\n\n" + "\n\n\n".join(out) + "\n\n\nend of trees" + tail


def test_a_large_file_parsed_from_its_mapping_equals_the_text(tmp_path):
    """Loading from a path maps the file and hands pages back behind the parser (in steps of
    1 MiB); the result must be the model the text gives, and the file must be untouched."""
    text = _trained("regression")[0].model_to_string()
    copies = -(-(5 << 20) // len(text))           # over 5 MiB: several pages handed back
    big = _repeated(text, copies)
    path = tmp_path / "big.txt"
    path.write_text(big)
    mapped = map_model_file(path)
    assert isinstance(mapped, mmap.mmap)
    from_map = parse_fast(mapped)
    assert from_map is not None
    assert mapped[:] == big.encode()              # the pages come back from the file
    mapped.close()
    assert_same(from_map, parse_fast(big.encode()))
    assert_same(quickscorer.load(path).ensemble, from_map)
    assert path.read_text() == big


def test_an_empty_file_is_refused_clearly(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    with pytest.raises(ModelFormatError):
        quickscorer.load(path)


_LOCALE_CHILD = r"""
import locale, sys
import numpy as np
import quickscorer
path = sys.argv[1]
locale.setlocale(locale.LC_ALL, "C")
ref = quickscorer.load(path)
locale.setlocale(locale.LC_ALL, "de_DE.UTF-8")       # decimal comma
assert locale.localeconv()["decimal_point"] == ","
got = quickscorer.load(path)
for name, a in ref.ensemble.trees.arrays.items():
    if a is not None:
        assert np.array_equal(a, got.ensemble.trees.arrays[name]), name
X = np.random.default_rng(0).normal(size=(50, ref.n_features))
assert np.array_equal(ref.predict(X), got.predict(X))
print("same")
"""


def test_a_decimal_comma_locale_reads_the_same_numbers(tmp_path):
    """strtod follows the program's LC_NUMERIC: under a German locale the C parser once read
    every threshold 1.5 as 1. It reads numbers as the "C" locale does, whatever is set."""
    localedef = shutil.which("localedef")
    if localedef is None or not Path("/usr/share/i18n/locales/de_DE").exists():
        pytest.skip("needs glibc's localedef and the de_DE locale source to build a "
                    "decimal-comma locale")
    subprocess.run([localedef, "-i", "de_DE", "-f", "UTF-8", str(tmp_path / "de_DE.UTF-8")],
                   check=True, capture_output=True)
    model = Path(quickscorer.__file__).parent / "data" / "demo_model.txt"
    out = subprocess.run([sys.executable, "-c", _LOCALE_CHILD, str(model)],
                         env={**os.environ, "LOCPATH": str(tmp_path)}, capture_output=True,
                         text=True)
    assert out.returncode == 0 and out.stdout.strip() == "same", out.stderr[-2000:]
