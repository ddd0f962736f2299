"""Building a model folder atomically, shared by the bundled model's conversion (models.py) and adapter
merges (adapters.py)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def building_folder(target: Path) -> Iterator[Path]:
    """A temporary folder beside `target` that becomes `target` whole when the block succeeds (a model
    folder: `config.json` marks it done), so parallel first builds are safe and a crash leaves nothing."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        yield tmp
        try:
            os.rename(tmp, target)
        except OSError:  # another process finished first
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
