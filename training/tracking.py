"""The experiment tracker: TensorBoard event files, one folder per run under `runs/tracking/`
(docs/decisions/experiment-tracker.md says why TensorBoard). View them with its standard UI:

    .venv/bin/tensorboard --logdir runs/tracking

Training logs every step's metrics under `train/<run folder name>`, evaluation its scores under
`eval/<date-time>-<output folder name>`. LONGREAD_TRACKING_DIR moves the store (the tests point it at a
temporary folder).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

DEFAULT_TRACKING_DIR = Path("runs") / "tracking"


def tracking_root() -> Path:
    """Where every run's event files go: LONGREAD_TRACKING_DIR, else runs/tracking (git-ignored),
    relative to the working folder as `longread train`'s default run folder is."""
    return Path(os.environ.get("LONGREAD_TRACKING_DIR") or DEFAULT_TRACKING_DIR)


class Tracker:
    """One run's event files. `resume_step` > 0 drops what an earlier attempt logged past that step, as the
    trainer's resume drops those lines of metrics.jsonl, so a resumed curve has one point per step."""

    def __init__(self, folder: Path, resume_step: int = 0):
        from torch.utils.tensorboard import SummaryWriter

        self.folder = Path(folder)
        self._writer = SummaryWriter(str(self.folder), purge_step=resume_step + 1 if resume_step else None)

    def scalars(self, values: Mapping[str, Any], step: int, prefix: str = "") -> None:
        """Every finite number of `values` as a scalar `prefix + name`; strings and the like are left out."""
        for name, value in values.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                self._writer.add_scalar(prefix + name, value, step)

    def text(self, tag: str, text: str, step: int = 0) -> None:
        """Markdown shown in TensorBoard's Text tab (a config, a results table)."""
        self._writer.add_text(tag, text, step)

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of a run's event files as (step, value) pairs by tag, read back by TensorBoard's own
    EventAccumulator (what its UI shows)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder), size_guidance={"scalars": 0})  # 0: keep every point
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}
