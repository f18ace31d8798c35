"""The project's shape: its modules import each other without cycles, no module imports one
of ours inside a function (an import inside a function is kept for optional third-party
dependencies alone), and the files and links its pages and code cite are in the repository."""
from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import quickscorer

PACKAGE = Path(quickscorer.__file__).parent
#: the repository (the package may be an installed wheel's: .ci/wheel)
ROOT = Path(__file__).resolve().parents[1]


def _modules() -> dict[str, Path]:
    mods = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _resolve(module: str, is_package: bool, node: ast.ImportFrom | ast.Import,
             known: set[str]) -> list[str]:
    """The modules an import statement in `module` loads: ``from P import n`` loads P.n
    where that is a module, else P."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = module.split(".")
        base = base if is_package else base[:-1]
        base = base[:len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    return [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix
            for a in node.names]


def import_graph() -> tuple[dict[str, set[str]], list[tuple[str, int, str]]]:
    """Edges between our modules from module-level imports, and the imports of our modules
    found inside functions (module, line, name)."""
    mods = _modules()
    compiled = {".".join(p.relative_to(PACKAGE.parent).with_name(p.name.split(".")[0]).parts)
                for pattern in ("_*.so", "_*.pyd") for p in PACKAGE.rglob(pattern)}
    known = set(mods) | compiled
    graph: dict[str, set[str]] = {m: set() for m in mods}
    nested: list[tuple[str, int, str]] = []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"
        top = set(id(n) for n in tree.body)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = [n for n in _resolve(mod, is_package, node, known) if n in known]
            if not names:
                continue
            if id(node) in top:
                graph[mod].update(n for n in names if n in mods and n != mod)
            else:
                nested.extend((mod, node.lineno, n) for n in names)
    return graph, nested


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_the_checker_sees_a_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycle_between_our_modules():
    graph, _ = import_graph()
    # a package importing its own submodules is how it exposes them; the other direction
    # (a submodule importing its package's __init__) is the kind of edge a cycle needs
    assert len(graph) > 20 and any(graph.values())
    assert _find_cycle(graph) is None, f"import cycle: {' -> '.join(_find_cycle(graph))}"


def test_no_module_of_ours_is_imported_inside_a_function():
    _, nested = import_graph()
    assert nested == [], "imports inside functions: " + ", ".join(
        f"{m}:{line} imports {n}" for m, line, n in nested)


#: our modules that need an optional extra: module -> (a package the extra installs, the extra)
EXTRA_MODULES = {"quickscorer.dask": ("dask", "dask"),
                 "quickscorer.serving": ("mlserver", "serve")}


def test_every_module_imports_on_its_own():
    """Each module imports first, in a fresh interpreter (no module relies on another having
    been imported before it)."""
    def fresh(module: str):
        run = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                             text=True, timeout=120)
        return module, run.returncode, run.stderr[-400:]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(fresh, sorted(_modules())))
    # a module of an optional extra, where that extra is not installed, says which to install
    absent = {mod: extra for mod, (dep, extra) in EXTRA_MODULES.items()
              if importlib.util.find_spec(dep) is None}
    failed = [r for r in results if r[1] != 0 and r[0] not in absent]
    assert failed == [], failed
    for mod, rc, err in results:
        if mod in absent:
            assert rc != 0 and f"quickscorer[{absent[mod]}]" in err, (mod, err)


def test_the_package_under_test_is_the_one_meant():
    # .ci/wheel runs this suite against the installed wheel (QUICKSCORER_INSTALLED=1): the
    # tree's own package must not be the one imported there, and must be everywhere else
    inside = Path(quickscorer.__file__).resolve().is_relative_to(ROOT)
    assert inside != (os.environ.get("QUICKSCORER_INSTALLED", "") == "1"), quickscorer.__file__


def test_the_public_names_import():
    for name in quickscorer.__all__:
        getattr(quickscorer, name)          # AttributeError if a public name went missing


# ---- every file the product cites, and every link of its pages, is in the repository ----

#: what a user reads and what the code says (data files are not prose)
PRODUCT = ("README.md", "docs", "quickscorer", "src", "benchmarks", "tests")
TEXT_SUFFIXES = {".md", ".py", ".pyx", ".pxd", ".h", ".c", ".toml", ".cfg", ".txt"}
#: model fixtures and generated C are data, not prose
NOT_PROSE = ("tests/legacy/", "quickscorer/data/")

CITED_PATH = re.compile(r"(?<![\w/.-])((?:docs|benchmarks|src|quickscorer|tests)/[\w./-]*\w\."
                        r"(?:md|py|pyx|pxd|h|c))\b")
MD_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def product_files() -> list[Path]:
    try:
        run = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--", *PRODUCT],
                             capture_output=True, text=True, timeout=60)
        listed = run.stdout if run.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        listed = None
    if listed is not None:
        paths = [ROOT / p for p in listed.splitlines()]
    else:                                   # an unpacked sdist: every file under the folders
        paths = [p for top in PRODUCT for p in
                 ([ROOT / top] if (ROOT / top).is_file() else (ROOT / top).rglob("*"))]
    return [p for p in paths
            if p.is_file() and p.suffix in TEXT_SUFFIXES
            and not p.relative_to(ROOT).as_posix().startswith(NOT_PROSE)
            and not (p.suffix == ".c" and p.relative_to(ROOT).as_posix().startswith("src/"))]


def test_every_cited_file_and_link_resolves_inside_the_repository():
    missing = []
    for p in product_files():
        text = p.read_text(encoding="utf-8", errors="replace")
        rel = p.relative_to(ROOT).as_posix()
        for cited in set(CITED_PATH.findall(text)):
            # a path from the root, or as the kernels include it (-I src)
            if not ((ROOT / cited).exists() or (ROOT / "src" / cited).exists()):
                missing.append(f"{rel}: cites {cited}")
        if p.suffix == ".md":
            for link in set(MD_LINK.findall(text)):
                if "://" in link or link.startswith("mailto:"):
                    continue
                if not (p.parent / link).resolve().exists():
                    missing.append(f"{rel}: links {link}")
    assert missing == [], "\n".join(missing)


#: a dotted path a comment or docstring cites: from the package, or from one of its
#: subpackages as the code's own comments name them (``rapidscorer.levels.level_arrays``)
CITED_NAME = re.compile(r"(?<![\w./-])(quickscorer\.)?(algorithms|rapidscorer|qs|ir|importers|"
                        r"inputs|explain|paper)\.[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?![\w(])")
CITED_BASE = {"rapidscorer": "quickscorer.algorithms.", "qs": "quickscorer.algorithms."}


def _cited_name_resolves(dotted: str) -> bool:
    """Whether ``dotted`` names a module, or a name in it; a function or class must be cited
    from the module that defines it (or a package that exports it), not one that imports it."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        try:
            mod = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        obj = mod
        for name in parts[k:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        owner = getattr(obj, "__module__", None) if callable(obj) else None
        return (k == len(parts) or hasattr(mod, "__path__") or owner is None
                or not owner.startswith("quickscorer") or owner == mod.__name__)
    return False


def test_every_cited_module_path_exists():
    """Every dotted module path (and name in a module) the package's and kernels' comments
    and docstrings cite exists where they say."""
    sources = [*PACKAGE.rglob("*.py")]
    if (ROOT / "src").is_dir():
        sources += [p for ext in ("*.pyx", "*.pxd", "*.h") for p in (ROOT / "src").rglob(ext)]
    missing = []
    for path in sorted(sources):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in CITED_NAME.finditer(line):
                cited = m.group(0)
                if re.search(r"\.(md|py|pyx|pxd|h|c|txt|json)$", cited):
                    continue                  # a file's name, checked by the test above
                full = cited if m.group(1) else CITED_BASE.get(m.group(2),
                                                               "quickscorer.") + cited
                if not _cited_name_resolves(full):
                    missing.append(f"{path.name}:{n}: {cited}")
    assert missing == [], "\n".join(missing)


def test_the_module_path_check_sees_a_stale_name():
    assert _cited_name_resolves("quickscorer.algorithms.rapidscorer.levels.level_arrays")
    assert _cited_name_resolves("quickscorer.ir.Ensemble")           # a package's export
    assert not _cited_name_resolves("quickscorer.algorithms.rapidscorer.layout.level_arrays")
    assert not _cited_name_resolves("quickscorer.algorithms.rapidscorer.nowhere")


def test_the_readme_is_a_first_ten_minutes():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text) < 10_000, f"README.md holds {len(text)} characters"
    assert "quickscorer demo" in text and 'pip install -e ".[test]" && python -m pytest' in text
    for source in ("LightGBM", "XGBoost", "CatBoost", "scikit-learn", "ONNX"):
        assert f"| {source} |" in text, f"the README's Supported table lacks {source}"


def _docstring_names(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""


def test_every_package_docstring_names_each_of_its_modules():
    """A newcomer's map: each package's docstring names every module in it (``name``): its
    Python modules and subpackages, and the extension modules built from the same folder
    under src/ (the source tree mirrors the package)."""
    missing = []
    src = ROOT / "src" / "quickscorer"
    packages = sorted(PACKAGE.rglob("__init__.py"))
    assert len(packages) >= 9
    for init in packages:
        here = init.parent
        doc = _docstring_names(here)
        names = [p.stem for p in here.glob("*.py") if p.stem != "__init__"]
        names += [p.name for p in here.iterdir() if (p / "__init__.py").exists()]
        names += [p.stem for p in (src / here.relative_to(PACKAGE)).glob("*.pyx")]
        missing += [f"{init.relative_to(ROOT)} does not name {n}" for n in sorted(names)
                    if f"``{n}``" not in doc]
    assert missing == [], "\n".join(missing)


def test_every_switch_the_code_reads_is_documented():
    """Each ``QUICKSCORER_*`` variable the package, the kernels or the build read has a row in
    docs/algorithms.md (run time) or docs/architecture.md (build)."""
    switch = re.compile(r"QUICKSCORER_[A-Z0-9_]+")
    code = [ROOT / "setup.py", *PACKAGE.rglob("*.py"), *(ROOT / "src").rglob("*.pyx"),
            *(ROOT / "src").rglob("*.h")]
    read = {m for p in code for m in switch.findall(p.read_text(encoding="utf-8"))
            if not m.endswith("_H")}             # header include guards, not switches
    docs = "".join((ROOT / "docs" / n).read_text(encoding="utf-8")
                   for n in ("algorithms.md", "architecture.md"))
    # a row names its variable in its first column (the build's table) or its second (the
    # tuning table's: field, variable, default, what it sets)
    rows = {m for line in docs.splitlines() if line.startswith("| `")
            for m in switch.findall("|".join(line.split("|")[1:3]))}
    assert len(read) > 15 and read - rows == set(), sorted(read - rows)


def test_every_field_of_the_tuning_table_is_documented_with_its_variable_and_command():
    """docs/algorithms.md's tuning table has a row per field of ``quickscorer.Tuning``, with
    the field's environment variable where it has one; every field names a command that
    re-measures it, a module this repository holds."""
    import quickscorer
    docs = (ROOT / "docs" / "algorithms.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(" `"): line for line in docs.splitlines()
            if line.startswith("| `")}
    for name, _default, why, command, env in quickscorer.Tuning.explain():
        assert name in rows, name
        assert (f"`{env}`" in rows[name]) if env else True, name
        assert why and command.startswith("python "), name
        if (ROOT / "benchmarks" / "__init__.py").exists():      # not in an unpacked sdist
            for module in re.findall(r"-m (benchmarks[.\w]+)", command):
                assert (ROOT / (module.replace(".", "/") + ".py")).exists(), (name, module)


def test_the_benchmarks_are_a_package_that_edits_no_import_path():
    """Each module of benchmarks/ imports as ``benchmarks.<name>`` from the repository's root
    (its scripts run as ``python -m benchmarks.matrix``), none of benchmarks/ or tests/ edits
    sys.path, and a module fails to import only for want of a third-party package."""
    bench = ROOT / "benchmarks"
    if not (bench / "__init__.py").exists():
        pytest.skip("benchmarks/ is not part of this tree (an unpacked sdist)")
    edits = [f"{p.relative_to(ROOT)}:{n}" for top in (bench, ROOT / "tests")
             for p in top.rglob("*.py")
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\bsys\.path\.(insert|append)\(", line)]
    assert edits == [], edits
    modules = [".".join(p.relative_to(ROOT).with_suffix("").parts)
               for p in sorted(bench.rglob("*.py")) if p.name != "__init__.py"]

    # the folder this run imports benchmarks/ from: the root, or the scratch folder holding a
    # link to it where the suite runs against an installed wheel (.ci/test_installed.py), whose
    # quickscorer the root's uncompiled source package must not shadow
    import benchmarks
    home = Path(list(benchmarks.__path__)[0]).parent

    def fresh(module: str):
        run = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                             text=True, timeout=300, cwd=home)
        return module, run.returncode, run.stderr[-400:]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(fresh, modules))
    # a third-party package not installed, or a pytest-benchmark group skipping without one
    missing = re.compile(r"(ModuleNotFoundError: No module named|Skipped: could not import) "
                         r"'(?!benchmarks|quickscorer)")
    failed = [r for r in results if r[1] != 0 and not missing.search(r[2])]
    assert len(modules) > 40 and failed == [], failed
