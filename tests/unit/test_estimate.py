"""The reading-time estimate is for the engine that serves the model version a new reading gets, for a pass of
several questions, and with the model's start when no worker has it up."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.models import ModelVersion
from app.services.documents import ENGINE_SPEEDS, EXTRACT_S_PER_CHUNK, estimate_reading
from app.services.health import Health
from app.services.views import DocumentView
from app.settings import Settings
from app.ui.read_views import asked_questions, describe_document, describe_pass
from app.ui.text import fmt_seconds

DOC = dict(
    id=1,
    title="book.txt",
    filename="book.txt",
    format="txt",
    status="ready",
    error=None,
    size_bytes=1,
    pages=1,
    page_unit="section",
    char_count=1,
    token_count=409_600,
    created_at=None,
)


def test_the_estimate_is_for_the_versions_engine(tmp_path):
    settings = Settings(data_dir=tmp_path, engine="transformers")
    remote = ModelVersion(name="remote", base_model="m", engine="openai", template_set=settings.template_set)
    e = estimate_reading(1000, settings, remote)
    assert (e.engine, e.seconds) == ("openai", None)  # served remotely: no speed figure, whatever the settings say
    local = ModelVersion(name="local", base_model="m", engine="vllm-local", template_set=settings.template_set)
    assert estimate_reading(1000, settings, local).basis == ENGINE_SPEEDS["vllm-local"].basis
    own = ModelVersion(name="own", base_model="m", engine=None, template_set=settings.template_set)
    assert estimate_reading(1000, settings, own).engine == "transformers"  # none of its own: the settings'


def test_an_extractive_version_is_estimated_without_writing_a_memory_per_chunk(tmp_path):
    """Its chunks are scored, not rewritten: one model call (the answer), so a long document costs little more
    than a short one."""
    settings = Settings(data_dir=tmp_path, engine="vllm-local")
    kept = ModelVersion(
        name="kept", base_model="m", engine=None, template_set=settings.template_set, memory_policy="extractive"
    )
    written = ModelVersion(
        name="written", base_model="m", engine=None, template_set=settings.template_set, memory_policy="generative"
    )
    short, long = estimate_reading(4096, settings, kept), estimate_reading(409_600, settings, kept)
    assert long.chunks == 100 * short.chunks
    assert long.seconds - short.seconds == pytest.approx((long.chunks - short.chunks) * EXTRACT_S_PER_CHUNK, abs=0.1)
    assert estimate_reading(409_600, settings, written).seconds > 50 * long.seconds
    # its chunks end between sentences, so a few more than the tokens' count: the line says so
    assert long.whole_sentences and not estimate_reading(409_600, settings, written).whole_sentences
    line = describe_document(DocumentView(**{**DOC, "estimate": long}))
    n, size = f"{long.chunks:,}", long.chunk_tokens
    assert f"reads about {n} chunks of up to {size} tokens, each ending between sentences, on " in line
    plain = describe_document(DocumentView(**{**DOC, "estimate": estimate_reading(409_600, settings, written)}))
    assert f"reads {n} chunks of {size} tokens on " in plain


def _health(state: str, starting_for_s: float | None = None) -> Health:
    return Health(
        workers=0 if state == "none" else 1,
        engine_state=state,
        engine="vllm-local",
        detail=None,
        starting_for_s=starting_for_s,
    )


def test_a_pass_shares_the_writing_on_vllm_and_not_in_process(tmp_path):
    vllm = estimate_reading(4000, Settings(data_dir=tmp_path, engine="vllm-local"))
    one, two = vllm.pass_seconds(1), vllm.pass_seconds(2)
    assert one == vllm.seconds and vllm.per_question_s < one  # the prompts are only part of a question's time
    assert two - one == pytest.approx(vllm.per_question_s, abs=0.1)  # a second question adds its prompts only
    batch = ENGINE_SPEEDS["vllm-local"].shared_decode_by
    beyond = vllm.pass_seconds(batch + 1) - vllm.pass_seconds(batch)
    assert beyond == pytest.approx(vllm.per_question_s + vllm.shared_s, abs=0.1)  # a second batch writes again
    local = estimate_reading(4000, Settings(data_dir=tmp_path, engine="transformers"))
    assert local.pass_seconds(3) == pytest.approx(3 * local.seconds, abs=0.1)  # one question after another


def test_the_models_start_is_added_until_a_worker_has_it_up(tmp_path):
    settings = Settings(data_dir=tmp_path, engine="vllm-local")
    start = ENGINE_SPEEDS["vllm-local"].start_s
    assert estimate_reading(4000, settings, h=_health("none")).start_s == start
    assert estimate_reading(4000, settings, h=_health("failed")).start_s == start  # a start is still ahead
    assert estimate_reading(4000, settings, h=_health("ready")).start_s is None
    assert estimate_reading(4000, settings, h=_health("starting", 10.0)).start_s == pytest.approx(start - 10, abs=1)
    assert estimate_reading(4000, settings, h=_health("starting", start + 5)).start_s is None  # up any moment
    assert estimate_reading(4000, settings).start_s is None  # the workers' state unknown: nothing claimed


def test_the_pass_line_counts_the_questions_and_the_start(tmp_path):
    e = estimate_reading(4000, Settings(data_dir=tmp_path, engine="vllm-local"), h=_health("none"))
    three = describe_pass(e, 3)
    assert three.startswith("3 questions: at most about ") and fmt_seconds(e.pass_seconds(3)) in three
    assert f"+ about {fmt_seconds(e.start_s)} to start the model" in three
    assert describe_pass(e, 1).startswith("One question: about " + fmt_seconds(e.seconds))
    assert describe_pass(e, 0) == ""  # none typed yet: nothing claimed (issue 54)
    up = estimate_reading(4000, Settings(data_dir=tmp_path, engine="transformers"), h=_health("ready"))
    assert "start the model" not in describe_pass(up, 2) and fmt_seconds(up.pass_seconds(2)) in describe_pass(up, 2)
    remote = estimate_reading(
        4000, Settings(data_dir=tmp_path, engine="openai", openai_base_url="http://127.0.0.1:9/v1")
    )
    assert describe_pass(remote, 2) == ""  # no speed figure: nothing claimed
    assert asked_questions("Who?", "When?\n\n  \nWhere?") == ["Who?", "When?", "Where?"]


def test_the_estimate_counts_the_work_queued_before_a_new_question(settings):
    """Readings queued or under way come first: the pass line says how many and about how long (issue 54);
    an idle machine adds nothing."""
    from app.db import session_scope
    from app.models import Document, Reading, ReadingStatus
    from app.services import documents as docs
    from app.services.users import local_admin

    with session_scope(settings.resolved_database_url) as s:
        assert docs.queued_ahead(s, settings, None) == (0, 0.0)
        owner = local_admin(s).id
        big = Document(
            title="big",
            filename="big.txt",
            format="txt",
            sha256="a" * 64,
            size_bytes=1,
            token_count=4096,
            owner_id=owner,
        )
        small = Document(
            title="s", filename="s.txt", format="txt", sha256="b" * 64, size_bytes=1, token_count=640, owner_id=owner
        )
        s.add_all([big, small])
        s.flush()

        def reading(doc, status, cursor=0, total=None):
            s.add(
                Reading(
                    document_id=doc.id,
                    question="Q?",
                    model="smollm2",
                    chunk_tokens=64,
                    memory_tokens=32,
                    answer_tokens=16,
                    template_set="memagent",
                    status=status,
                    cursor=cursor,
                    total_chunks=total,
                )
            )

        reading(big, ReadingStatus.queued)
        reading(big, ReadingStatus.queued)
        reading(small, ReadingStatus.running, cursor=5, total=10)  # half read
        reading(small, ReadingStatus.done, cursor=10, total=10)  # finished: no work
        s.flush()
        n, seconds = docs.queued_ahead(s, settings, None)
        whole = (
            docs.estimate_reading(4096, settings).pass_seconds(2)
            + docs.estimate_reading(640, settings).pass_seconds(1) / 2
        )
        assert n == 3 and seconds == pytest.approx(whole, abs=0.2)
    line = describe_pass(replace(estimate_reading(640, settings), ahead_readings=n, ahead_s=seconds), 1)
    assert f"The workers are busy: 3 readings queued or under way, about {fmt_seconds(seconds)} of work" in line
    assert "busy" not in describe_pass(estimate_reading(640, settings), 1)
