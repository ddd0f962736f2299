"""The command line's progress bar (app/cli/progress.py): drawn on stderr only when stderr is a terminal."""

from __future__ import annotations

import io
import re

import pytest

from app.cli import progress as progress_module
from app.cli.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def tty_stderr(monkeypatch, capsys):
    """Bars on, as on a terminal (pytest puts its capture back on sys.stderr after fixtures run)."""
    monkeypatch.setattr(progress_module, "on_terminal", lambda: True)
    return lambda: capsys.readouterr().err


def test_no_bar_when_stderr_is_not_a_terminal(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    with Progress("chunk") as p:
        p.update(3, 10)
        p.write("a line")
    assert not p.shown and err.getvalue() == "a line\n"


def test_bar_counts_k_of_k_with_an_eta_on_a_terminal(tty_stderr):
    with Progress("chunk") as p:
        p.update(0, 12)
        p.update(4, 12)
        p.write("said above the bar")
    out = tty_stderr()
    assert p.shown and "said above the bar\n" in out
    assert re.search(r"chunk 4 of 12 \|.*\| 00:\d\d elapsed, ETA ", out), out


def test_work_done_before_the_first_look_is_not_counted_as_speed(tty_stderr):
    with Progress("step") as p:
        p.update(90, 100)  # a resumed run at step 90: the ETA must not assume 90 steps took no time
        assert p._bar.initial == 90 and p._bar.format_dict["rate"] is None
        p.update(91, 100)
    assert "step 91 of 100" in tty_stderr()


def test_no_bar_until_the_total_is_known(tty_stderr):
    with Progress("chunk") as p:
        p.update(0)  # the reading is not yet taken up: no K
        assert p._bar is None
        p.update(1, 6)
    drawn = tty_stderr()
    assert "chunk 1 of 6" in drawn and "of ?" not in drawn


def test_the_terminal_check_is_stderrs(monkeypatch):
    monkeypatch.setattr("sys.stderr", _Terminal())
    assert progress_module.on_terminal()
