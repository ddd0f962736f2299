"""Edit and resume (branches) against a real database, SQLite and PostgreSQL: a branch shares its
parent's earlier steps, starts from the edited memory and reads on; the parent never changes; two
concurrent edits make two branches; a branch of a branch resumes correctly; an interrupted branch
resumes after its last checkpoint. Through the service, the API and the CLI."""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app import cli
from app.db import session_scope
from app.models import Checkpoint
from app.services import documents, readings, runner
from app.services.errors import NotFound
from app.services.provenance import provenance
from app.services.readings import ReadingError
from app.settings import Settings
from app.web import create_app
from tests.fakes import FakeEngine

pytestmark = pytest.mark.integration

TEXT = "\n".join(f"Line {i}: the ship passed island number {i} at dawn." for i in range(80))
FILLER = "The wind rose and fell over the grey water all afternoon. "
FACTS = (
    FILLER * 6
    + "FACT: the key hangs behind the barometer. "
    + FILLER * 8
    + "FACT: the boat comes on Mondays. "
    + FILLER * 6
).strip()


def carry(prompt: str) -> str:
    """Memory = previous memory + the last island of the chunk; the answer = the final memory."""
    memory = re.search(r"<memory>\n(.*?)\n</memory>", prompt, re.DOTALL).group(1)
    if "<section>" in prompt:
        island = re.findall(r"island number (\d+)", prompt)[-1]
        return ("" if memory == "No previous memory" else memory + " ") + f"+{island}"
    return "\\boxed{" + memory + "}"


def _read(settings: Settings, tokenizer, ids: list[int], **kw) -> FakeEngine:
    engine = FakeEngine(tokenizer, carry, **kw)
    runner.run_readings(settings, ids, engine)
    return engine


def _answered(settings: Settings, tokenizer) -> int:
    doc, _ = documents.add_document(settings, "islands.txt", TEXT.encode())
    (r,) = readings.ask(settings, doc.id, ["Which islands?"], enqueue=False)
    _read(settings, tokenizer, [r.id])
    return r.id


def _own_rows(settings: Settings, reading_id: int) -> list[tuple]:
    with session_scope(settings.resolved_database_url) as s:
        rows = s.scalars(select(Checkpoint).where(Checkpoint.reading_id == reading_id).order_by(Checkpoint.step))
        return [(c.id, c.step, c.memory, c.origin, c.start_char, c.end_char) for c in rows]


def test_a_branch_shares_the_earlier_steps_reads_on_and_never_writes_into_its_parent(db_settings, tokenizer):
    a = _answered(db_settings, tokenizer)
    original = readings.show(db_settings, a)
    before = _own_rows(db_settings, a)
    n = len(original.checkpoints)
    assert n >= 5 and original.status == "done"

    b = readings.edit(db_settings, a, 3, "  +EDITED  ", edited_by="test", enqueue=False)
    assert (b.parent_reading_id, b.branched_at_step, b.status, b.cursor, b.total_chunks) == (a, 3, "queued", 3, n)
    assert [(c.step, c.origin) for c in b.checkpoints] == [(1, "agent"), (2, "agent"), (3, "edited")]
    assert b.checkpoints[2].memory == "+EDITED" and b.checkpoints[2].edited_by == "test"
    assert b.checkpoints[2].start_char == original.checkpoints[2].start_char  # the same chunk, its span kept
    assert [c.memory for c in b.checkpoints[:2]] == [c.memory for c in original.checkpoints[:2]]

    engine = _read(db_settings, tokenizer, [b.id])
    first = engine.calls[0][0][0]
    assert "<memory>\n+EDITED\n</memory>" in first  # resumes from the edited memory…
    chunk_4 = TEXT[original.checkpoints[3].start_char : original.checkpoints[3].end_char]
    assert chunk_4.strip() in first  # …at chunk 4
    assert len(engine.calls) == n - 3 + 1  # chunks 4..n and the answer: nothing before step 3 is read again

    got = readings.show(db_settings, b.id)
    assert got.status == "done" and [c.step for c in got.checkpoints] == list(range(1, n + 1))
    assert got.answer.startswith("+EDITED +") and got.answer != original.answer
    assert _own_rows(db_settings, a) == before  # the parent's rows: not one changed, none added
    again = readings.show(db_settings, a)
    assert (again.answer, again.status, again.cursor) == (original.answer, "done", n)
    assert [r.id for r in readings.branches(db_settings, a)] == [b.id]
    assert [r.id for r in readings.branches(db_settings, b.id)] == []


def test_editing_the_last_step_only_re_answers(db_settings, tokenizer):
    a = _answered(db_settings, tokenizer)
    n = len(readings.show(db_settings, a).checkpoints)
    b = readings.edit(db_settings, a, n, "only this", enqueue=False)
    engine = _read(db_settings, tokenizer, [b.id])
    assert len(engine.calls) == 1 and "<section>" not in engine.calls[0][0][0]  # the answer, nothing read
    assert readings.show(db_settings, b.id).answer == "only this"


def test_two_concurrent_edits_of_one_reading_make_two_branches(db_settings, tokenizer):
    a = _answered(db_settings, tokenizer)
    before = _own_rows(db_settings, a)
    start = threading.Barrier(2)

    def edit(memory: str) -> int:
        start.wait()  # both edits go to the database at the same moment
        return readings.edit(db_settings, a, 2, memory, enqueue=False).id

    with ThreadPoolExecutor(2) as pool:
        made = [f.result() for f in [pool.submit(edit, m) for m in ("left", "right")]]  # raises what they raised
    assert len(set(made)) == 2
    _read(db_settings, tokenizer, made)
    memories = {readings.show(db_settings, i).checkpoints[1].memory for i in made}
    answers = {readings.show(db_settings, i).answer.split()[0] for i in made}
    assert memories == answers == {"left", "right"}
    assert sorted(r.id for r in readings.branches(db_settings, a)) == sorted(made)
    assert _own_rows(db_settings, a) == before


def test_a_branch_of_a_branch_resumes_correctly(db_settings, tokenizer):
    a = _answered(db_settings, tokenizer)
    n = len(readings.show(db_settings, a).checkpoints)
    b = readings.edit(db_settings, a, 2, "B", enqueue=False).id
    _read(db_settings, tokenizer, [b])
    b_rows = _own_rows(db_settings, b)
    c = readings.edit(db_settings, b, 4, "C", enqueue=False).id  # a step B read itself
    d = readings.edit(db_settings, b, 1, "D", enqueue=False).id  # a step B shares with A
    _read(db_settings, tokenizer, [c, d])

    got_c, got_d = readings.show(db_settings, c), readings.show(db_settings, d)
    origins_c = [(x.step, x.origin, x.memory.split()[0]) for x in got_c.checkpoints[:5]]
    first = readings.show(db_settings, a).checkpoints[0].memory
    assert origins_c == [
        (1, "agent", first),
        (2, "edited", "B"),
        (3, "agent", "B"),
        (4, "edited", "C"),
        (5, "agent", "C"),
    ]
    assert [x.step for x in got_c.checkpoints] == list(range(1, n + 1)) and got_c.answer.startswith("C +")
    assert got_d.checkpoints[0].origin == "edited" and got_d.answer.startswith("D +")
    assert [x.step for x in got_d.checkpoints] == list(range(1, n + 1))
    assert _own_rows(db_settings, b) == b_rows  # B untouched by its branches
    tree = readings.branches(db_settings, a)
    assert [(r.id, r.parent_reading_id, r.branched_at_step) for r in tree] == [(b, a, 2), (c, b, 4), (d, b, 1)]


def forget(prompt: str) -> str:
    """A reader that keeps only the chunk's last island, dropping whatever its memory held; it answers its memory."""
    if "<section>" in prompt:
        return "+" + re.findall(r"island number (\d+)", prompt)[-1]
    return carry(prompt)


def test_a_persons_correction_stays_in_the_memory_to_the_answer(db_settings, tokenizer):
    doc, _ = documents.add_document(db_settings, "islands.txt", TEXT.encode())
    (a,) = readings.ask(db_settings, doc.id, ["Which islands?"], enqueue=False)
    runner.run_readings(db_settings, [a.id], FakeEngine(tokenizer, forget))
    original = readings.show(db_settings, a.id)
    own = [c.memory for c in original.checkpoints]  # the reader's: "+island", one a step
    assert len(own) >= 5 and "\n" not in "".join(own)

    def read_on(memory: str, reading: int, step: int) -> tuple[int, list[str], str]:
        branch = readings.edit(db_settings, reading, step, memory, enqueue=False).id
        runner.run_readings(db_settings, [branch], FakeEngine(tokenizer, forget))
        got = readings.show(db_settings, branch)
        return branch, [c.memory for c in got.checkpoints[step:]], got.answer

    # What a person adds is put back where the reader dropped it, ahead of what it wrote; what they left is not.
    b, later, answer = read_on(f"{own[1]}\nThe key: under the mat.", a.id, 2)
    assert later == [f"The key: under the mat.\n{m}" for m in own[2:]] and "under the mat" in answer
    # A branch of it keeps what they kept of that correction and what they add; a line they delete goes.
    _, later, _ = read_on("The boat: Mondays.\nThe key: under the mat.", b, 4)
    assert later == [f"The boat: Mondays.\nThe key: under the mat.\n{m}" for m in own[4:]]
    _, later, answer = read_on("The boat: Mondays.", b, 4)
    assert later == [f"The boat: Mondays.\n{m}" for m in own[4:]] and "mat" not in answer
    # An edit that only deletes pins nothing: the reader's own memories follow.
    _, later, _ = read_on("No relevant information yet.", a.id, 2)
    assert later == own[2:]


def test_the_step_count_is_the_length_of_the_timeline(db_settings, tokenizer):
    """What the Read tab's timeline checks each tick (one light query) counts what the timeline shows."""
    a = _answered(db_settings, tokenizer)
    b = readings.edit(db_settings, a, 3, "B", enqueue=False).id
    c = readings.edit(db_settings, b, 2, "C", enqueue=False).id  # a step B shares with A
    d = readings.edit(db_settings, b, 3, "D", enqueue=False).id  # B's own edited step
    counted = [readings.step_count(db_settings, i) for i in (a, b, c, d)]
    assert counted == [len(readings.show(db_settings, i).checkpoints) for i in (a, b, c, d)]
    _read(db_settings, tokenizer, [b, c])
    assert [readings.step_count(db_settings, i) for i in (b, c)] == [counted[0]] * 2  # read to the end
    with pytest.raises(NotFound):
        readings.step_count(db_settings, 10**6)


def test_an_interrupted_branch_resumes_after_its_last_checkpoint(db_settings, tokenizer):
    a = _answered(db_settings, tokenizer)
    before = _own_rows(db_settings, a)
    n = len(before)
    b = readings.edit(db_settings, a, 2, "resumed", enqueue=False).id
    with pytest.raises(RuntimeError, match="simulated"):
        _read(db_settings, tokenizer, [b], fail_on_call=3)  # steps 3 and 4 committed, then the crash
    got = readings.show(db_settings, b)
    assert (got.status, got.cursor) == ("failed", 4)
    engine = _read(db_settings, tokenizer, [b])  # resumed by id, as a retry or a worker's sweeper does
    assert "<memory>\n" + got.checkpoints[-1].memory + "\n</memory>" in engine.calls[0][0][0]
    done = readings.show(db_settings, b)
    assert done.status == "done" and [c.step for c in done.checkpoints] == list(range(1, n + 1))
    assert [c.step for c in done.checkpoints if c.origin == "edited"] == [2]
    assert _own_rows(db_settings, a) == before


def test_edits_are_validated(db_settings, tokenizer):
    a = _answered(db_settings, tokenizer)
    n = len(readings.show(db_settings, a).checkpoints)
    for step, memory, message in [
        (0, "x", f"has steps 1 to {n}: it has no step 0"),
        (n + 1, "x", f"no step {n + 1}"),
        (1, "   ", "must not be empty"),
        (1, "x" * 20_001, "at most 20,000 characters"),
        (1, "a\x00b", "NUL"),
    ]:
        with pytest.raises(ReadingError, match=re.escape(message)):
            readings.edit(db_settings, a, step, memory, enqueue=False)
    (queued,) = readings.ask(db_settings, readings.show(db_settings, a).document_id, ["New?"], enqueue=False)
    with pytest.raises(ReadingError, match="has no checkpoint yet"):
        readings.edit(db_settings, queued.id, 1, "x", enqueue=False)
    with pytest.raises(NotFound, match="no reading 999999"):
        readings.edit(db_settings, 999999, 1, "x", enqueue=False)
    assert readings.branches(db_settings, a) == []


def test_edit_and_branches_through_the_api_and_the_cli(settings, tokenizer, monkeypatch, capsys):
    a = _answered(settings, tokenizer)
    n = len(readings.show(settings, a).checkpoints)
    with TestClient(create_app(settings)) as client:
        r = client.post(f"/api/readings/{a}/branches", json={"step": 2, "memory": "<img src=x onerror=alert(1)>"})
        assert r.status_code == 201, r.text
        branch = r.json()
        assert (branch["parent_reading_id"], branch["branched_at_step"], branch["status"]) == (a, 2, "queued")
        assert [(c["step"], c["origin"], c["edited_by"]) for c in branch["checkpoints"]] == [
            (1, "agent", None),
            (2, "edited", "api:local"),
        ]  # the entry point and the user
        assert [x["id"] for x in client.get(f"/api/readings/{a}/branches").json()] == [branch["id"]]
        cps = client.get(f"/api/readings/{branch['id']}/checkpoints", params={"with_chunks": "true"}).json()
        assert [c["step"] for c in cps["checkpoints"]] == [1, 2] and cps["checkpoints"][0]["chunk"]
        for body in (
            {"step": 0, "memory": "x"},
            {"step": 2, "memory": ""},
            {"step": n + 1, "memory": "x"},
            {"step": 2, "memory": "x" * 20_001},
        ):
            assert client.post(f"/api/readings/{a}/branches", json=body).status_code == 422, body
        assert client.post("/api/readings/999999/branches", json={"step": 1, "memory": "x"}).status_code == 404
        assert client.get("/api/readings/999999/branches").status_code == 404
        paths = client.get("/openapi.json").json()["paths"]
        assert {
            "/api/readings/{reading_id}/branches",
            "/api/readings/{reading_id}/checkpoints",
            "/api/readings/{reading_id}/checkpoints/{step}",
        } <= set(paths)

    engine = FakeEngine(tokenizer, carry)
    monkeypatch.setattr(cli, "get_settings", lambda: settings)
    monkeypatch.setattr(runner, "engine_for", lambda _settings: engine)
    assert cli.main(["edit", str(a), "--step", str(n - 1), "--memory", "from the cli", "--json"]) == 0
    (got,) = json.loads(capsys.readouterr().out)["readings"]
    assert (got["parent_reading_id"], got["branched_at_step"], got["status"]) == (a, n - 1, "done")
    assert got["answer"].startswith("from the cli +") and len(got["checkpoints"]) == n
    edited = got["checkpoints"][n - 2]
    assert (edited["origin"], edited["memory"]) == ("edited", "from the cli")
    assert set(edited) == {"step", "memory", "start_char", "end_char", "origin", "first_page", "last_page"}
    assert cli.main(["readings", str(got["document_id"])]) == 0
    assert f"#{got['id']} done ({n}/{n} chunks) branch of #{a} at step {n - 1}" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="longread edit: the edited memory must not be empty"):
        cli.main(["edit", str(a), "--step", "1", "--memory", " "])


def test_one_step_at_a_time_with_its_chunk(db_settings, tokenizer):
    a = _answered(db_settings, tokenizer)
    b = readings.edit(db_settings, a, 2, "edited two", enqueue=False).id
    first = readings.step(db_settings, b, 1)  # a step the branch shares with its parent
    assert (first.steps, first.previous_memory, first.checkpoint.origin) == (2, None, "agent")
    assert first.checkpoint.chunk == TEXT[first.checkpoint.start_char : first.checkpoint.end_char]
    second = readings.step(db_settings, b, 2)
    assert (second.checkpoint.memory, second.previous_memory) == ("edited two", first.checkpoint.memory)
    assert second.parent_reading_id == a and second.branched_at_step == 2
    with pytest.raises(ReadingError, match="has steps 1 to 2: no step 3"):
        readings.step(db_settings, b, 3)
    with TestClient(create_app(db_settings)) as client:
        got = client.get(f"/api/readings/{b}/checkpoints/2").json()
        assert got["checkpoint"]["memory"] == "edited two" and got["previous_memory"] == first.checkpoint.memory
        assert got["checkpoint"]["chunk"] == second.checkpoint.chunk and got["steps"] == 2
        assert client.get(f"/api/readings/{b}/checkpoints/3").status_code == 422
        assert client.get("/api/readings/999999/checkpoints/1").status_code == 404


def test_provenance_of_the_final_memory_and_the_answer(db_settings, tokenizer):
    """Each fact the memory keeps came from the chunk where it was first written down, even reworded."""
    doc, _ = documents.add_document(db_settings, "facts.txt", FACTS.encode())

    def keep_facts(prompt: str) -> str:
        memory = re.search(r"<memory>\n(.*?)\n</memory>", prompt, re.DOTALL).group(1)
        if "<section>" not in prompt:
            return "\\boxed{The key hangs behind the barometer.}"
        kept = [] if memory in ("No previous memory", "Nothing yet.") else [memory]
        chunk = re.search(r"<section>\n(.*?)\n</section>", prompt, re.DOTALL).group(1)
        for word, fact in (
            ("barometer", "the key hangs behind the barometer"),
            ("Mondays", "the boat comes on Mondays"),
        ):
            if word in chunk and fact not in memory:
                kept.append(f"Noted: {fact}.")
        return " ".join(kept) or "Nothing yet."

    (r,) = readings.ask(db_settings, doc.id, ["Where is the key?"], 40, enqueue=False)
    runner.run_readings(db_settings, [r.id], FakeEngine(tokenizer, keep_facts))
    got = readings.show(db_settings, r.id)
    sources = provenance(db_settings, r.id)
    memory = [x for x in sources if x.part == "memory"]
    assert [x.sentence for x in memory] == [
        "Noted: the key hangs behind the barometer.",
        "Noted: the boat comes on Mondays.",
    ]
    for x, word in zip(memory, ("barometer", "Mondays")):
        c = got.checkpoints[x.step - 1]
        first = next(k for k, cp in enumerate(got.checkpoints, 1) if word in FACTS[cp.start_char : cp.end_char])
        assert x.step == first  # it entered the memory at the chunk that told it
        assert FACTS[x.passage_start : x.passage_end] == x.passage
        assert x.passage.startswith("FACT: ") and word in x.passage and x.score >= 0.8 and x.origin == "agent"
        assert x.passage_start < c.end_char and x.passage_end > c.start_char  # it overlaps the chunk
    (answer,) = [x for x in sources if x.part == "answer"]
    assert answer.step == memory[0].step and answer.passage == memory[0].passage  # reworded, same source
    with TestClient(create_app(db_settings)) as client:
        assert client.get(f"/api/readings/{r.id}/provenance").json()[0]["passage"] == memory[0].passage
        assert client.get("/api/readings/999999/provenance").status_code == 404
