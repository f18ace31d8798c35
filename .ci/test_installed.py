"""The test suite against an installed quickscorer (a wheel), not the source tree.

    python .ci/test_installed.py TREE [pytest arguments]

Runs TREE's tests from a scratch folder: the tree's root is not on ``sys.path``, so every
test imports the installed package (``QUICKSCORER_INSTALLED=1`` has
``tests/test_architecture.py`` check that it does), while the ``benchmarks`` package that
some tests import is reached through a link in the scratch folder (a copy where links cannot
be made). ``.ci/wheel`` and cibuildwheel's test command (``pyproject.toml``) call it.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    tree = Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory() as scratch:
        link = Path(scratch, "benchmarks")
        try:
            link.symlink_to(tree / "benchmarks", target_is_directory=True)
        except OSError:                     # Windows without the right to make links
            shutil.copytree(tree / "benchmarks", link,
                            ignore=shutil.ignore_patterns("cache", "results", "reports"))
        env = dict(os.environ, PYTHONPATH=scratch, QUICKSCORER_INSTALLED="1")
        return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                "--rootdir", str(tree), str(tree / "tests"), *sys.argv[2:]],
                               cwd=scratch, env=env)


if __name__ == "__main__":
    raise SystemExit(main())
