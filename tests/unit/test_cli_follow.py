"""`longread ask` and `review` beside a running server (app/cli/readings.py `read_to_end`): the review is handed
to the worker as the questions are; what is said when the server's worker stops and this process reads on. The
database, the worker and the runner are faked."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.cli import build_parser
from app.cli import readings as cli_readings
from app.services import readings, runner

STALE_AFTER_POLLS = 30  # polls before the dead worker's heartbeat is stale: 15 s at the real POLL_S


def _view(reading_id: int, status: str) -> SimpleNamespace:
    return SimpleNamespace(
        id=reading_id,
        document_id=1,
        question="Q?",
        answer="A" if status == "done" else None,
        status=status,
        error=None,
        model="m",
        chunk_tokens=96,
        memory_tokens=32,
        checkpoints=[],
        total_chunks=4,
        cursor=4 if status == "done" else 1,
        parent_reading_id=None,
        branched_at_step=None,
        created_at=None,
        progress=SimpleNamespace(reading_s=2.0, waiting_s=1.0),
    )


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
    monkeypatch.setattr(cli_readings, "live_worker", lambda _settings: None)
    monkeypatch.setattr(readings, "show", lambda _settings, i, user=None: _view(i, state.status))
    monkeypatch.setattr(runner, "run_readings", run_readings)
    return state


def test_the_fallback_is_said_once_while_the_heartbeat_goes_stale(dead_worker, capsys):
    views, took = cli_readings._follow(None, "ask", [7])
    err = capsys.readouterr().err
    assert dead_worker.calls == STALE_AFTER_POLLS and views[0].status == "done"
    assert took == "by the server's worker, then this process, in 2.0 s (after 1.0 s in its queue)"
    assert err.count("the server's worker stopped; reading on in this process") == 1, err


def test_ctrl_c_after_the_fallback_does_not_say_the_server_reads_on(dead_worker, capsys):
    dead_worker.interrupt = True
    assert cli_readings._follow(None, "ask", [7]) is None
    err = capsys.readouterr().err
    assert "the server reads on" not in err and "`longread checkpoints 7` shows how far" in err, err


def test_ctrl_c_while_the_worker_reads_says_the_server_reads_on(dead_worker, monkeypatch, capsys):
    def interrupted(_settings):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_readings, "live_worker", interrupted)
    assert cli_readings._follow(None, "ask", [7]) is None
    assert "stopped following; the server reads on" in capsys.readouterr().err


def test_review_hands_its_questions_to_a_running_worker_and_follows_them(monkeypatch, capsys):
    from app.cli import review as cli_review
    from app.services import review

    asked, followed = {}, {}
    server = SimpleNamespace(summary=lambda: "1 worker, model ready.")
    monkeypatch.setattr(cli_review, "migrate_db", lambda _settings: None)
    monkeypatch.setattr(cli_review, "local_admin", lambda _settings: None)
    monkeypatch.setattr(cli_readings, "live_worker", lambda _settings: server)
    monkeypatch.setattr(
        review,
        "review",
        lambda *_a, enqueue, user: (
            asked.update(enqueue=enqueue)
            or SimpleNamespace(id=3, rows=[SimpleNamespace(reading_id=i) for i in range(10, 51)])
        ),
    )
    monkeypatch.setattr(review, "show_review", lambda *_a, user: SimpleNamespace(id=3, rows=[], page_unit="page"))
    monkeypatch.setattr(review, "filtered", lambda view, _which: view)

    def follow(_settings, command, ids):
        followed.update(command=command, ids=ids)
        return [], "by the server's worker in 9.0 s (after 0.5 s in its queue)"

    monkeypatch.setattr(cli_readings, "_follow", follow)
    args = build_parser().parse_args(["review", "1"])
    assert args.func(None, args) == 0
    err = capsys.readouterr().err
    assert asked == {"enqueue": True} and followed == {"command": "review", "ids": list(range(10, 51))}
    assert (
        "longread review: submitted to the running server's queue: 1 worker, model ready. Following readings "
        "10 to 50." in err
    )
    assert "review #3: 41 questions read in one pass by the server's worker in 9.0 s" in err
