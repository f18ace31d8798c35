"""Write the RankLib fixtures under ``tests/legacy/ranklib-<version>/`` with RankLib itself.

Run by hand, from the repository root, with a RankLib jar and Java (Debian's OpenJDK 17)::

    python tests/legacy/make_ranklib_fixtures.py RankLib-2.3.jar 2.3
    python tests/legacy/make_ranklib_fixtures.py RankLib-trunk.jar 2.9-SNAPSHOT

The jars: the Lemur project's releases (``RankLib/tags/release-2.3/bin/RankLib.jar`` in its
repository), or its ``RankLib/trunk`` compiled with ``javac`` (version 2.9-SNAPSHOT in its
``pom.xml``). The rows are LightGBM's ranking example (``../shared/data/lightgbm-examples``,
``rank.train`` and ``rank.test`` with their ``.query`` files) written as dense LETOR lines
(every feature of 1 to 300 on every line, ``qid:`` from the query files): RankLib 2.3 refuses
a feature a line leaves out. For each ranker (MART, LambdaMART, Random Forests) RankLib trains
on ``rank.train`` and saves ``<kind>.txt`` (``-save``); then, loading that file
(``-load``), it scores ``rank.test`` into ``<kind>.scores`` (``-score``: query, row, score).
The test suite reads these files; it runs RankLib only where ``$RANKLIB_JAR`` names a jar.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[2] / "shared" / "data" / "lightgbm-examples"

#: the ranker's number on RankLib's command line and its training options
RANKERS = {"mart": ("0", ["-tree", "25"]), "lambdamart": ("6", ["-tree", "25"]),
           "rf": ("8", ["-bag", "4", "-tree", "3"])}
N_FEATURES = 300


def dense_letor(name: str, out: Path) -> None:
    """``name`` and its ``.query`` file as dense LETOR lines."""
    sizes = [int(v) for v in (SHARED / f"{name}.query").read_text().split()]
    lines = (SHARED / name).read_text().splitlines()
    written, row = [], 0
    for q, n in enumerate(sizes):
        for line in lines[row:row + n]:
            label, *tokens = line.split()
            values = dict(t.split(":") for t in tokens)
            written.append(" ".join([label, f"qid:{q + 1}"]
                                    + [f"{j}:{values.get(str(j), '0')}"
                                       for j in range(1, N_FEATURES + 1)]))
        row += n
    out.write_text("\n".join(written) + "\n")


def ranklib(jar: str, *args: str) -> None:
    """RankLib's command line (its Evaluator class: a compiled trunk has no manifest)."""
    subprocess.run(["java", "-cp", jar, "ciir.umass.edu.eval.Evaluator", *args], check=True,
                   stdout=subprocess.DEVNULL)


def main(argv=None) -> int:
    jar, version = (argv or sys.argv[1:])[:2]
    out = HERE / f"ranklib-{version}"
    out.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        train, test = Path(tmp) / "rank.train.dense", Path(tmp) / "rank.test.dense"
        dense_letor("rank.train", train)
        dense_letor("rank.test", test)
        for kind, (ranker, options) in RANKERS.items():
            ranklib(jar, "-train", str(train), "-ranker", ranker, *options, "-leaf", "10",
                    "-metric2t", "NDCG@10", "-silent", "-save", str(out / f"{kind}.txt"))
            ranklib(jar, "-load", str(out / f"{kind}.txt"), "-rank", str(test), "-score",
                    str(out / f"{kind}.scores"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
