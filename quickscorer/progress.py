"""A one-line progress bar for long work on a terminal (rows, rows/s, time left where the size
is known); nothing where standard error is not a terminal."""
from __future__ import annotations

import sys
import time


def _clock(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60:02d}:{rest % 60:02d}"


class Progress:
    """``update(rows, done)`` as work goes (``done``: the fraction finished, or None where
    unknown); redrawn at most every ``interval`` seconds; ``close()`` clears the line."""

    def __init__(self, label: str, enabled: bool | None = None, stream=None,
                 interval: float = 0.2, width: int = 24):
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.enabled = enabled
        self.label = label
        self.interval = interval
        self.width = width
        self.start = time.perf_counter()
        self._last = 0.0
        self._shown = 0

    def line(self, rows: int, done: float | None, now: float) -> str:
        elapsed = max(now - self.start, 1e-9)
        rate = rows / elapsed
        parts = [self.label]
        if done is not None:
            done = min(max(done, 0.0), 1.0)
            fill = int(done * self.width)
            parts.append(f"[{'#' * fill}{'.' * (self.width - fill)}] {done * 100:3.0f}%")
        parts.append(f"{rows:,} rows")
        parts.append(f"{rate:,.0f} rows/s")
        parts.append(_clock(elapsed))
        if done is not None and done > 0:
            parts.append(f"{_clock(elapsed * (1 - done) / done)} left")
        return "  ".join(parts)

    def update(self, rows: int, done: float | None = None) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < self.interval:
            return
        self._last = now
        text = self.line(rows, done, now)
        pad = max(0, self._shown - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._shown = len(text)

    def close(self) -> None:
        if self.enabled and self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0
