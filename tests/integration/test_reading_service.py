"""Readings against a real database (SQLite and PostgreSQL): checkpoints, cursor, resumption."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from app.db import session_scope
from app.models import Checkpoint, ReadingStatus, utcnow
from app.services.documents import ingest
from app.services.readings import ReadingError, create_readings, get_reading
from app.services.runner import run_readings
from app.settings import Settings
from inference.capture import document_spans
from tests.fakes import FakeEngine

pytestmark = pytest.mark.integration

TEXT = "\n".join(f"Line {i}: the ship sailed on past island number {i}." for i in range(120))


def echo_last_line(prompt: str) -> str:
    if "<section>" in prompt:
        section = re.search(r"<section>\n(.*)\n</section>", prompt, re.S).group(1)
        return "last seen: " + section.strip().splitlines()[-1]
    return "\\boxed{" + re.search(r"<memory>\n(.*)\n</memory>", prompt, re.S).group(1) + "}"


def _new_reading(settings: Settings, n_questions: int = 1) -> tuple[int, list[int]]:
    with session_scope(settings.resolved_database_url) as s:
        doc = ingest(s, settings, "islands.txt", TEXT.encode())
        ids = [r.id for r in create_readings(s, settings, doc.id, [f"Which island? ({i})" for i in range(n_questions)])]
        return doc.id, ids


def test_reading_writes_one_checkpoint_per_chunk_and_the_answer(db_settings, tokenizer):
    _, ids = _new_reading(db_settings, n_questions=2)
    engine = FakeEngine(tokenizer, echo_last_line)
    run_readings(db_settings, ids, engine)
    with session_scope(db_settings.resolved_database_url) as s:
        for reading_id in ids:
            r = get_reading(s, reading_id)
            assert r.status == ReadingStatus.done
            assert r.total_chunks == r.cursor == len(r.checkpoints) > 3
            assert [c.step for c in r.checkpoints] == list(range(1, r.total_chunks + 1))
            assert r.checkpoints[0].start_char == 0 and r.checkpoints[-1].end_char == len(TEXT)
            assert all(a.end_char == b.start_char for a, b in zip(r.checkpoints, r.checkpoints[1:]))
            assert r.answer == "last seen: " + TEXT.splitlines()[-1]
    # both questions advanced together: one engine call per chunk plus one for the answers
    assert len(engine.calls) == r.total_chunks + 1
    assert all(len(messages) == 2 for messages, _ in engine.calls)


def test_reading_interrupted_after_step_2_resumes_at_step_3(db_settings, tokenizer):
    _, (reading_id,) = _new_reading(db_settings)
    crashing = FakeEngine(tokenizer, echo_last_line, fail_on_call=3)
    with pytest.raises(RuntimeError, match="simulated"):
        run_readings(db_settings, [reading_id], crashing)
    url = db_settings.resolved_database_url
    with session_scope(url) as s:
        r = get_reading(s, reading_id)
        assert (r.status, r.cursor, [c.step for c in r.checkpoints]) == (ReadingStatus.failed, 2, [1, 2])
        assert "simulated engine crash" in r.error
        memory_2 = r.checkpoints[-1].memory

    resumed = FakeEngine(tokenizer, echo_last_line)
    run_readings(db_settings, [reading_id], resumed)
    first_prompt = resumed.calls[0][0][0]
    assert f"<memory>\n{memory_2}\n</memory>" in first_prompt  # continues from checkpoint 2
    with session_scope(url) as s:
        r = get_reading(s, reading_id)
        assert r.status == ReadingStatus.done and r.attempts == 2
        assert f"<section>\n{TEXT[r.checkpoints[2].start_char : r.checkpoints[2].end_char]}\n</section>" in first_prompt
        steps = [c.step for c in r.checkpoints]
        assert steps == list(range(1, r.total_chunks + 1))
        dupes = s.scalar(select(func.count()).select_from(Checkpoint).where(Checkpoint.reading_id == reading_id))
        assert dupes == len(steps)
    assert len(resumed.calls) == r.total_chunks - 2 + 1


def test_finished_reading_is_not_read_again(db_settings, tokenizer):
    _, ids = _new_reading(db_settings)
    run_readings(db_settings, ids, FakeEngine(tokenizer, echo_last_line))
    again = FakeEngine(tokenizer, echo_last_line)
    run_readings(db_settings, ids, again)
    assert again.calls == []


def test_questions_on_a_failed_document_are_refused(db_settings):
    with session_scope(db_settings.resolved_database_url) as s:
        doc = ingest(s, db_settings, "junk.bin", b"\x00\x01\x02 binary")
        assert doc.status.value == "failed" and "binary" in doc.error
        with pytest.raises(ReadingError, match="not ready"):
            create_readings(s, db_settings, doc.id, ["anything?"])


def test_a_question_asked_during_a_pass_joins_it(db_settings, tokenizer):
    doc_id, (first,) = _new_reading(db_settings)
    joined: list[int] = []

    def respond(prompt: str) -> str:
        if not joined:  # while the first reading is on its first chunk, a user asks another question
            with session_scope(db_settings.resolved_database_url) as s:
                joined.extend(r.id for r in create_readings(s, db_settings, doc_id, ["A later question?"]))
        return echo_last_line(prompt)

    engine = FakeEngine(tokenizer, respond)
    assert run_readings(db_settings, engine=engine) == 2
    with session_scope(db_settings.resolved_database_url) as s:
        a, b = get_reading(s, first), get_reading(s, joined[0])
        assert a.status == b.status == ReadingStatus.done
        total = a.total_chunks
    # the second reading started at chunk 1 while the first read chunk 2: one call carried both
    sizes = [len(messages) for messages, _ in engine.calls]
    assert sizes[0] == 1 and sizes[1] == 2
    # K shared update calls + B's last chunk + one answer call each; two passes would take 2K + 2
    assert len(engine.calls) == total + 3


def test_a_reading_with_a_live_runner_is_not_taken_twice(db_settings, tokenizer):
    _, (reading_id,) = _new_reading(db_settings)
    with session_scope(db_settings.resolved_database_url) as s:
        r = get_reading(s, reading_id)
        r.status, r.heartbeat_at = ReadingStatus.running, utcnow()  # another worker holds it
    engine = FakeEngine(tokenizer, echo_last_line)
    assert run_readings(db_settings, engine=engine) == 0 and engine.calls == []
    with session_scope(db_settings.resolved_database_url) as s:
        r = get_reading(s, reading_id)
        r.heartbeat_at = utcnow() - timedelta(seconds=db_settings.stale_after_s + 1)  # ... and died
    assert run_readings(db_settings, engine=engine) == 1


def test_readings_by_id_past_max_batch_are_all_read(db_settings, tokenizer):
    settings = db_settings.model_copy(update={"max_batch": 3})
    _, ids = _new_reading(settings, n_questions=7)
    engine = FakeEngine(tokenizer, echo_last_line)
    assert run_readings(settings, ids, engine) == 7  # three at a time: the rest join as others finish
    with session_scope(settings.resolved_database_url) as s:
        assert {get_reading(s, i).status for i in ids} == {ReadingStatus.done}
    assert max(len(messages) for messages, _ in engine.calls) == 3


CONTRACT = " ".join(
    [f"Section {i}. The Supplier shall deliver batch {i} of the goods to the Buyer's warehouse." for i in range(40)]
    + ["This Agreement shall be governed by and construed in accordance with the laws of the State of Delaware."]
    + [f"Section {i}. The Buyer shall pay for batch {i} within thirty days of delivery." for i in range(40, 80)]
)


def test_an_extractive_version_reads_by_keeping_sentences_and_asks_the_model_only_to_answer(db_settings, tokenizer):
    """A model version whose memory policy is extractive: its readings store the policy, each checkpoint's memory is
    sentences of the document kept verbatim by the shipped relevance weights (no generation), and the model is
    called once, for the answer, from the final memory."""
    from app.services.models import register_version

    question = "Which state's or country's law governs this agreement?"
    with session_scope(db_settings.resolved_database_url) as s:
        register_version(s, "extractive", "smollm2", template_set="memagent", memory_policy="extractive", activate=True)
        doc = ingest(s, db_settings, "supply.txt", CONTRACT.encode())
        (reading,) = create_readings(s, db_settings, doc.id, [question], memory_tokens=40)
        reading_id = reading.id
        assert reading.memory_policy == "extractive"
    engine = FakeEngine(tokenizer, echo_last_line)
    run_readings(db_settings, [reading_id], engine)
    with session_scope(db_settings.resolved_database_url) as s:
        r = get_reading(s, reading_id)
        assert r.status == ReadingStatus.done and r.total_chunks > 3
        law = "This Agreement shall be governed by and construed in accordance with the laws of the State of Delaware."
        assert r.checkpoints[-1].memory == law == r.answer
        for c in r.checkpoints:
            assert c.memory == "No relevant information yet." or all(line in CONTRACT for line in c.memory.splitlines())
        edges = [c.end_char for c in r.checkpoints[:-1]]  # its chunks end between sentences: none is kept cut
        assert edges and not [(a, b) for a, b in document_spans(CONTRACT) if any(a < e < b for e in edges)]
    assert len(engine.calls) == 1  # the answer: no memory was generated
