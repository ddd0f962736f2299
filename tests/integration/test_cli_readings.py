"""The reading commands a user scripts (issue 10's names): `ask --json` (ids, origins, pages),
`readings`, `checkpoints` (with the chunks on request), `cancel`, `retry`; and the API's checkpoints
route. In process, on SQLite, with a scripted engine (tests/integration/test_cli.py runs `ask` with
the real model)."""

from __future__ import annotations

import json
import re
import time

import pytest
from fastapi.testclient import TestClient

from app import cli
from app.cli import progress
from app.cli import readings as cli_readings
from app.cli.common import migrate_db
from app.services import documents, readings, runner
from app.web import create_app
from inference.models import READER
from tests.fakes import FakeEngine, activate_version_named

pytestmark = pytest.mark.integration

TEXT = "\n".join(f"Entry {i}: the keeper saw {i} ships pass the northern cape tonight." for i in range(60))


def respond(prompt: str) -> str:
    if "<section>" in prompt:
        return "ships so far: " + re.findall(r"saw (\d+) ships", prompt)[-1]
    return "\\boxed{59 ships}"


@pytest.fixture
def run(settings, tokenizer, monkeypatch, capsys):
    """`longread ARGS…` in this process on the test's settings and scripted engine: (exit code, stdout, stderr)."""
    engine = FakeEngine(tokenizer, respond)
    monkeypatch.setattr(cli, "get_settings", lambda: settings)
    monkeypatch.setattr(runner, "engine_for", lambda _settings: engine)
    migrate_db(settings)  # what every command does first: the bundled versions seeded
    activate_version_named(settings, READER)  # the scripted engine writes the memories

    def run_cli(*argv: str) -> tuple[int, str, str]:
        code = cli.main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run_cli


def test_ask_json_has_ids_origins_and_pages_and_readings_lists_them(run, tmp_path):
    path = tmp_path / "ledger.txt"
    path.write_text(TEXT, encoding="utf-8")
    code, out, _ = run(
        "ask", str(path), "-q", "How many ships?", "-q", "Which cape?", "--chunk-tokens", "120", "--json"
    )
    assert code == 0
    got = json.loads(out)["readings"]
    assert [r["question"] for r in got] == ["How many ships?", "Which cape?"]
    first = got[0]
    assert isinstance(first["id"], int) and first["status"] == "done" and first["answer"] == "59 ships"
    steps = first["checkpoints"]
    assert len(steps) >= 3 and set(steps[0]) == {
        "step",
        "memory",
        "start_char",
        "end_char",
        "origin",
        "first_page",
        "last_page",
    }
    assert all(c["origin"] == "agent" and c["first_page"] == c["last_page"] == 1 for c in steps)
    assert steps[-1]["memory"] == "ships so far: 59"

    code, out, _ = run("readings", str(first["document_id"]), "--json")
    listed = json.loads(out)
    assert listed["document_id"] == first["document_id"]
    assert [r["id"] for r in listed["readings"]] == [got[1]["id"], first["id"]]  # newest first
    assert listed["readings"][1]["steps"] == len(steps) and "checkpoints" not in listed["readings"][1]
    code, out, _ = run("readings", str(first["document_id"]))
    assert f"#{first['id']} done ({len(steps)}/{len(steps)} chunks) Q: How many ships?\n   A: 59 ships" in out

    code, out, _ = run("checkpoints", str(first["id"]), "--json")
    assert json.loads(out) == {"reading_id": first["id"], "checkpoints": steps}
    code, out, _ = run("checkpoints", str(first["id"]), "--json", "--with-chunks")
    with_chunks = json.loads(out)["checkpoints"]
    assert "".join(c["chunk"] for c in with_chunks) == TEXT  # the chunks tile the document
    assert all(c["chunk"] == TEXT[c["start_char"] : c["end_char"]] for c in with_chunks)
    code, out, _ = run("checkpoints", str(first["id"]))
    assert out.startswith("step 1 (agent, page 1, characters 0-") and "memory: ships so far: 59" in out


def test_ask_json_stays_one_object_on_stdout_while_a_bar_counts_chunks_on_stderr(run, tmp_path, monkeypatch):
    monkeypatch.setattr(progress, "on_terminal", lambda: True)  # bars drawn, as on a terminal
    monkeypatch.setattr(cli_readings, "POLL_S", 0.01)
    slow = runner.engine_for(None)
    generate = slow.generate

    def generate_slowly(*a, **k):  # a step takes long enough for the watcher to see each one
        time.sleep(0.05)
        return generate(*a, **k)

    monkeypatch.setattr(slow, "generate", generate_slowly)
    path = tmp_path / "ledger.txt"
    path.write_text(TEXT, encoding="utf-8")
    code, out, err = run("ask", str(path), "-q", "How many ships?", "--chunk-tokens", "120", "--json")
    (got,) = json.loads(out)["readings"]  # fails if the bar (or anything else) reached stdout
    total = len(got["checkpoints"])
    assert code == 0 and got["answer"] == "59 ships" and total >= 3
    assert "reading in this process (no server's worker is running)" in err
    counts = [int(k) for k in re.findall(rf"chunk (\d+) of {total} \|", err)]
    assert counts[-1] == total and len(set(counts)) >= 2, err  # it moved while reading, to the end
    assert "ETA" in err


def test_ask_in_process_says_it_was_asked_to_read_here(run, tmp_path):
    path = tmp_path / "ledger.txt"
    path.write_text(TEXT, encoding="utf-8")
    code, out, err = run("ask", str(path), "-q", "How many ships?", "--chunk-tokens", "120", "--in-process", "--json")
    assert code == 0 and json.loads(out)["readings"][0]["answer"] == "59 ships"
    assert "reading in this process (as --in-process asks)" in err and "no server's worker" not in err


def test_cancel_and_retry_from_the_command_line(run, settings):
    doc, _ = documents.add_document(settings, "ledger.txt", TEXT.encode())
    (r,) = readings.ask(settings, doc.id, ["How many ships?"], 120, enqueue=False)
    _, out, _ = run("cancel", str(r.id))
    assert out == f"reading {r.id}: cancelled\n"
    _, out, _ = run("retry", str(r.id), "--json")  # resumes here, as `ask` reads
    (got,) = json.loads(out)["readings"]
    assert (got["id"], got["status"], got["answer"]) == (r.id, "done", "59 ships")
    with pytest.raises(SystemExit, match="only failed or cancelled readings are retried"):
        run("retry", str(r.id))
    for argv, message in [
        (("checkpoints", "999"), "no reading 999"),
        (("readings", "999"), "no document 999"),
        (("cancel", "x"), "'x' is not a reading id"),
        (("readings", "x"), "not a document id"),
    ]:
        with pytest.raises(SystemExit, match=message):
            run(*argv)


def test_the_api_gives_checkpoints_with_their_chunks_on_request(settings, tokenizer):
    doc, _ = documents.add_document(settings, "ledger.txt", TEXT.encode())
    (r,) = readings.ask(settings, doc.id, ["How many ships?"], 120, enqueue=False)
    runner.run_readings(settings, [r.id], FakeEngine(tokenizer, respond))
    with TestClient(create_app(settings)) as client:
        plain = client.get(f"/api/readings/{r.id}/checkpoints").json()
        assert plain["reading_id"] == r.id and len(plain["checkpoints"]) >= 3
        assert all(c["chunk"] is None and c["origin"] == "agent" for c in plain["checkpoints"])
        full = client.get(f"/api/readings/{r.id}/checkpoints", params={"with_chunks": "true"}).json()["checkpoints"]
        assert "".join(c["chunk"] for c in full) == TEXT
        assert [c["memory"] for c in full] == [c["memory"] for c in plain["checkpoints"]]
        reading = client.get(f"/api/readings/{r.id}").json()
        assert all(c["chunk"] is None for c in reading["checkpoints"])  # not on the reading itself
        assert client.get("/api/readings/999/checkpoints").status_code == 404
