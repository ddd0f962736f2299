"""The repository passes `ruff check` (pyproject.toml [tool.ruff]: pycodestyle errors, pyflakes, import order) and
`ruff format --check` (its [tool.ruff.format]; `ruff format .` fixes what fails), and no module of the packages
(app/, inference/, training/) is over 500 lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAX_LINES = 500
PACKAGES = ("app", "inference", "training")


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ruff", *args, "--no-cache", "--output-format", "concise", "."]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ruff_finds_nothing() -> None:
    result = _ruff("check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_would_change_nothing() -> None:
    result = _ruff("format", "--check")
    assert result.returncode == 0, "run `ruff format .`; it would reformat:\n" + result.stdout + result.stderr


def test_no_module_is_over_500_lines() -> None:
    sizes = {
        str(path.relative_to(REPO)): len(path.read_text(encoding="utf-8").splitlines())
        for package in PACKAGES
        for path in (REPO / package).rglob("*.py")
    }
    assert sizes, "no modules found"
    over = {path: n for path, n in sorted(sizes.items()) if n > MAX_LINES}
    assert over == {}, f"modules over {MAX_LINES} lines (split them along a seam): {over}"
