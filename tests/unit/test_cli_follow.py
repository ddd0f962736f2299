"""`longread ask` beside a running server (app/cli/readings.py `_follow_and_print`): what it says when the
server's worker stops and this process reads on, with the database, the worker and the runner faked."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from app.cli import readings as cli_readings
from app.services import readings, runner

STALE_AFTER_POLLS = 30  # polls before the dead worker's heartbeat is stale: 15 s at the real POLL_S


def _view(reading_id: int, status: str) -> SimpleNamespace:
    return SimpleNamespace(id=reading_id, document_id=1, question="Q?", answer="A" if status == "done" else None,
                           status=status, error=None, model="m", chunk_tokens=96, memory_tokens=32, checkpoints=[],
                           total_chunks=4, cursor=4 if status == "done" else 1, parent_reading_id=None,
                           branched_at_step=None, created_at=None,
                           progress=SimpleNamespace(reading_s=2.0, waiting_s=1.0))  # fmt: skip


@pytest.fixture
def dead_worker(monkeypatch):
    """No worker alive; the runner takes the reading up only once its heartbeat is stale, and then reads it
    to the end (or is interrupted: `dead_worker.interrupt = True`). Returns the state."""
    state = SimpleNamespace(status="running", calls=0, interrupt=False)

    def run_readings(_settings, ids):
        state.calls += 1
        if state.calls >= STALE_AFTER_POLLS:
            if state.interrupt:
                raise KeyboardInterrupt
            state.status = "done"
        return 0

    monkeypatch.setattr(cli_readings, "POLL_S", 0)
    monkeypatch.setattr(cli_readings, "local_admin", lambda _settings: None)
    monkeypatch.setattr(cli_readings, "_live_worker", lambda _settings: None)
    monkeypatch.setattr(readings, "show", lambda _settings, i, user=None: _view(i, state.status))
    monkeypatch.setattr(runner, "run_readings", run_readings)
    return state


def test_the_fallback_is_said_once_while_the_heartbeat_goes_stale(dead_worker, capsys):
    assert cli_readings._follow_and_print(None, [7], as_json=True) == 0
    out, err = capsys.readouterr()
    assert dead_worker.calls == STALE_AFTER_POLLS and json.loads(out)["readings"][0]["status"] == "done"
    assert err.count("the server's worker stopped; reading on in this process") == 1, err


def test_ctrl_c_after_the_fallback_does_not_say_the_server_reads_on(dead_worker, capsys):
    dead_worker.interrupt = True
    assert cli_readings._follow_and_print(None, [7], as_json=False) == 130
    err = capsys.readouterr().err
    assert "the server reads on" not in err and "`longread checkpoints 7` shows how far" in err, err


def test_ctrl_c_while_the_worker_reads_says_the_server_reads_on(dead_worker, monkeypatch, capsys):
    def interrupted(_settings):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_readings, "_live_worker", interrupted)
    assert cli_readings._follow_and_print(None, [7], as_json=False) == 130
    assert "stopped following; the server reads on" in capsys.readouterr().err
