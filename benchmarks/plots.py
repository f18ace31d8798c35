"""Figures for the result pages: matplotlib drawn off-screen and saved as small palette PNGs
(a report page's figures stay in tens of kilobytes, not hundreds)."""
from __future__ import annotations

import io
from pathlib import Path


def pyplot():
    """matplotlib's pyplot on its off-screen backend, or None where matplotlib (the bench
    extra) is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_png(fig, path: Path, dpi: int = 100) -> None:
    """Write ``fig`` to ``path`` as a PNG of at most 64 colours (Pillow ships with
    matplotlib), and close it."""
    from PIL import Image
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    pyplot().close(fig)
    buf.seek(0)
    image = Image.open(buf).convert("RGB").quantize(colors=64, method=Image.Quantize.MEDIANCUT)
    image.save(path, optimize=True)
