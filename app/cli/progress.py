"""A progress bar for long commands (`ask`, `review`, `edit`, `retry`, `train`): "chunk k of K", elapsed and ETA.

It draws on stderr, and only when stderr is a terminal: piped or redirected output, and `--json` on
stdout, stay clean. Lines printed while a bar is drawn go through `Progress.write`, so the bar is
redrawn below them instead of being torn.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

from tqdm import tqdm

FORMAT = "{desc} {n_fmt} of {total_fmt} |{bar}| {elapsed} elapsed, ETA {remaining}"


def on_terminal() -> bool:
    """Whether bars are drawn: stderr is a terminal."""
    return sys.stderr.isatty()


def _width() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (AttributeError, ValueError, OSError):  # not a real file (tests), or no terminal
        return 0


class Progress:
    """`with Progress("chunk") as p: p.update(k, K)`; `unit` names what is counted (chunk, step).

    The bar appears at the first count with a total (a model that loads first draws its own bar, and a
    reading has no K before a runner takes it up). Work done before that first count (a resumed run, a
    reading followed midway) is where the rate is measured from, not speed."""

    def __init__(self, unit: str):
        self.unit = unit
        self.shown = on_terminal()
        self._bar: tqdm | None = None

    def update(self, done: int, total: int | None = None) -> None:
        """`done` of `total` counted now (never less than before)."""
        if not self.shown:
            return
        bar = self._bar
        if bar is None:
            if total is None:
                return
            # a terminal that reports no width (a bare pty) would get an empty bar: draw 80 by 24 there
            sized = _width() > 0
            self._bar = tqdm(
                total=total,
                initial=done,
                desc=self.unit,
                bar_format=FORMAT,
                file=sys.stderr,
                dynamic_ncols=sized,
                ncols=None if sized else 80,
                nrows=None if sized else 24,
                leave=True,
                smoothing=0.1,
            )
            return
        if total is not None and total != bar.total:
            bar.total = total
        if done > bar.n:
            bar.update(done - bar.n)
        else:
            bar.refresh()

    def write(self, line: str, file: TextIO | None = None) -> None:
        """Print a line (default stderr) above the bar."""
        out = file or sys.stderr
        if self._bar is None:
            print(line, file=out, flush=True)
        else:
            tqdm.write(line, file=out)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
