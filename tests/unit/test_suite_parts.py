"""tests/suite.py: the parts that `make test` runs cover the suite exactly once, and the suite fails when any
part fails."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

from tests.suite import ALONE, MODELS, PARTS, exit_code

MARKERS = ("model", "browser", "timing", "waits", "integration")


@pytest.mark.parametrize("marks", [set(c) for n in range(6) for c in itertools.combinations(MARKERS, n)])
def test_every_test_is_in_exactly_one_part(marks) -> None:
    chosen = [p.name for p in (ALONE, *PARTS) if Expression.compile(p.marker).evaluate(lambda name, **_: name in marks)]
    if "timing" in marks:
        expected = ALONE.name
    elif "waits" in marks:
        expected = "model tests that wait"
    else:
        expected = "models and browser" if marks & {"model", "browser"} else "the rest"
    assert chosen == [expected]


def test_the_parts_beside_the_model_side_yield_the_cpu_to_it() -> None:
    (models,) = [p for p in PARTS if p.marker.startswith(f"({MODELS})")]
    assert all(p.nice > models.nice for p in PARTS if p is not models)
    (waits,) = [p for p in PARTS if p.marker.startswith("waits")]
    assert all(p.nice > waits.nice for p in PARTS if p not in (models, waits))  # the rest yields to both


def test_the_suite_fails_if_any_part_fails() -> None:
    assert exit_code([0, 0]) == 0
    assert exit_code([0, 0, 1]) == 1
    assert exit_code([1, 0]) == exit_code([0, 1]) == 1
    assert exit_code([5, 0]) == exit_code([0, 5]) == 0  # the arguments named tests of one part only
    assert exit_code([5, 5]) == 5
    assert exit_code([5, 2]) == 2


def test_the_runner_runs_every_part_and_reports_a_failure_in_any(tmp_path) -> None:
    (tmp_path / "test_two.py").write_text(
        textwrap.dedent("""
        import pytest

        @pytest.mark.model
        def test_on_the_model_side():
            assert False, "the model side failed"

        def test_on_the_rest():
            pass

        @pytest.mark.model
        @pytest.mark.waits
        def test_waiting_beside():
            pass
    """)
    )
    done = subprocess.run(
        [sys.executable, "-m", "tests.suite", str(tmp_path / "test_two.py"), "-W", "ignore"],
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},  # seconds of plugins this file does not need
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "the model side failed" in out and "1 failed, 2 deselected" in out, out
    assert "===== the rest" in out and "===== model tests that wait" in out and out.count("1 passed, 2 deselected") == 2
    assert "suite wall time" in out, out
