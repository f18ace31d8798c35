"""Draw a result page's speed matrix: each cell's ratio to its fastest peer, the default path
and the AVX2 path side by side, against the 3x line.

    python -m benchmarks.plot_matrix benchmarks/reports/epyc-zen3-avx2.md

Reads the page's table whose header starts ``| model | rows a call | fastest peer |`` (the
format of every page in ``reports/``: model, rows, peer, the peer's us/doc, ours, ratio, ours
with ``QUICKSCORER_ISA=avx2``, its ratio) and writes ``<page>-matrix.png`` beside it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.plots import pyplot, save_png

HEADER = "| model | rows a call | fastest peer |"
BATCHES = ("1", "100", "10,000", "queries")


def read_matrix(page: Path) -> list[tuple[str, str, float, float | None]]:
    """(model, rows a call, ratio, AVX2 ratio or None) for each cell of the page's matrix."""
    cells, inside = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith(HEADER):
            inside = True
            continue
        if inside and not line.startswith("|"):
            break
        if inside and not line.startswith("| ---"):
            c = [x.strip().strip("*") for x in line.strip().strip("|").split("|")]
            ratio = float(c[5].rstrip("x†").strip())
            avx2 = float(c[7].rstrip("x†").strip()) if c[7] else None
            cells.append((c[0], c[1], ratio, avx2))
    if not cells:
        raise SystemExit(f"{page}: no table starting {HEADER!r}")
    return cells


def plot(cells, title: str, path: Path) -> bool:
    plt = pyplot()
    if plt is None:
        return False
    models = list(dict.fromkeys(c[0] for c in cells))
    batches = [b for b in BATCHES if any(c[1] == b for c in cells)]
    fig, axes = plt.subplots(1, len(batches), figsize=(3.2 * len(batches) + 2.4,
                                                       0.36 * len(models) + 1.4),
                             sharey=True, squeeze=False)
    for ax, batch in zip(axes[0], batches):
        by_model = {c[0]: c for c in cells if c[1] == batch}
        ys = range(len(models))
        ratios = [by_model[m][2] if m in by_model else 0 for m in models]
        avx2 = [by_model[m][3] or 0 if m in by_model else 0 for m in models]
        ax.barh([y - 0.2 for y in ys], ratios, 0.4, label="default path", color="#2b6cb0")
        if any(avx2):
            ax.barh([y + 0.2 for y in ys], avx2, 0.4, label="AVX2 forced", color="#9ac1e8")
        ax.axvline(3, color="#c53030", lw=1, ls="--", label="3x")
        ax.set_xscale("log")
        ax.set_xticks([1, 3, 10, 30], ["1x", "3x", "10x", "30x"])
        ax.minorticks_off()
        ax.set_title(f"{batch} row{'' if batch == '1' else 's'} a call"
                     if batch != "queries" else "a call per query")
        ax.grid(True, axis="x", alpha=0.3)
    axes[0][0].set_yticks(range(len(models)), models, fontsize=8)
    axes[0][0].invert_yaxis()
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.suptitle(title, fontsize=10)
    fig.supxlabel("ours against the fastest peer (times faster)", fontsize=9)
    fig.tight_layout()
    save_png(fig, path)
    return True


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("page", type=Path)
    args = p.parse_args(argv)
    title = args.page.read_text(encoding="utf-8").splitlines()[0].lstrip("# ")
    png = args.page.with_name(args.page.stem + "-matrix.png")
    if not plot(read_matrix(args.page), title, png):
        p.error("the plot needs matplotlib (pip install -e '.[bench]')")
    print(f"written to {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
