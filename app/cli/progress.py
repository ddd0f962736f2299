"""A progress bar for long commands (`ask`, `eval`, `train`, `review`): "chunk k of K", elapsed and ETA.

It draws on stderr, and only when stderr is a terminal: piped or redirected output, and `--json` on
stdout, stay clean. Lines printed while a bar is drawn go through `Progress.write`, so the bar is
redrawn below them instead of being torn.
"""

from __future__ import annotations

import sys
from typing import TextIO

from tqdm import tqdm

FORMAT = "{desc} {n_fmt} of {total_fmt} |{bar}| {elapsed} elapsed, ETA {remaining}"


def on_terminal() -> bool:
    """Whether bars are drawn: stderr is a terminal."""
    return sys.stderr.isatty()


class Progress:
    """`with Progress("chunk") as p: p.update(k, K)`; `unit` names what is counted (chunk, step, question)."""

    def __init__(self, unit: str, total: int | None = None):
        self.unit = unit
        self.shown = on_terminal()
        self._bar: tqdm | None = None
        #: whether a count was seen yet (the first one sets where the rate is measured from)
        self._counted = False
        if self.shown:
            self._bar = tqdm(total=total, desc=unit, bar_format=FORMAT, file=sys.stderr, dynamic_ncols=True,
                             leave=True, smoothing=0.1)  # fmt: skip

    def update(self, done: int, total: int | None = None, label: str | None = None) -> None:
        """`done` of `total` counted now (never less than before); `label` replaces the unit's name."""
        bar = self._bar
        if bar is None:
            return
        if label is not None and label != bar.desc:
            # a new set (eval's suites): its own count and ETA
            bar.reset(total=total)
            bar.set_description_str(label, refresh=False)
            self._counted = False
        elif total is not None and total != bar.total:
            bar.total = total
        if not self._counted and done:
            # work done before we looked (a resumed run, a reading followed midway) is no speed: start from it
            bar.initial = bar.n = done
            self._counted = True
            bar.refresh()
        elif done > bar.n:
            self._counted = True
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
