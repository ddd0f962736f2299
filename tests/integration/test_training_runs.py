"""Training runs from the app (issue 12): the service against a real database, then real training
workers (`longread worker --training`, a Celery process on PostgreSQL) running the real trainer on the
bundled SmolLM2, tiny runs: a run goes queued → running → done, is cancelled and resumed, survives its
worker being killed, is evaluated beside the active model and promoted to serve new readings."""

from __future__ import annotations

import doctest
import json
import os
import re
import subprocess
import sys
import time
from datetime import date, timedelta
from pathlib import Path

import pytest

import app.services.models as model_versions
import app.services.training_runs as training_runs
from app.cli import worker_command
from app.db import session_scope
from app.migrate import upgrade
from app.models import Reading
from app.services import documents, feedback, readings
from app.services.errors import NotFound
from app.services.models import active_version, key_metrics
from app.services.runner import run_readings
from app.services.training_runs import DataSelection, RunError, RunParams, lifecycle, shared
from app.services.users import Forbidden, add_user
from app.settings import Settings
from tests.conftest import MODEL_CACHE
from tests.fakes import FakeEngine
from tests.processes import WorkerGroup, wait_for

pytestmark = pytest.mark.integration

#: as small as the real trainer goes: one sample a step, two rollouts, 256-token documents in two chunks (the
#: sizes are the start version's: the settings' below)
TINY = dict(
    save_every=1,
    samples_per_step=1,
    group_size=2,
    # bfloat16 where the CPU computes it natively, float32 where it would emulate it (training.policy.run_precision)
    extra={
        "sft_samples_per_step": 1,
        "micro_batch_tokens": 512,
        "warmup_steps": 0,
        "threads": 1,
        "precision": "bfloat16",
    },
)
SYNTHETIC = DataSelection(lengths=(256,))


def _settings(tmp_path: Path, url: str) -> Settings:
    upgrade(url)
    return Settings(
        data_dir=tmp_path / "data",
        database_url=url,
        broker_url=f"sqla+sqlite:///{tmp_path / 'broker.db'}",
        model="smollm2",
        engine="transformers",
        model_cache_dir=MODEL_CACHE,
        chunk_tokens=128,
        memory_tokens=32,
        answer_tokens=16,
        stale_after_s=3,
        eval_n=2,
    )


@pytest.fixture
def sqlite_settings(tmp_path) -> Settings:
    return _settings(tmp_path, f"sqlite:///{tmp_path / 'app.db'}")


def _judged(settings: Settings) -> dict[int, int]:
    """Five documents (ids 1-5; 5 is held out), one answered reading each, judged: {document id: feedback id}.
    Document 4's verdict is wrong without a correction: it teaches nothing."""
    out = {}
    for i in range(1, 6):
        text = f"Ledger {i}.\n" + f"The vault code of room {i} is {1000 + i}. The corridor is quiet. " * 12
        doc, _ = documents.add_document(settings, f"ledger-{i}.txt", text.encode())
        (reading,) = [
            r.id for r in readings.ask(settings, doc.id, [f"What is the vault code of room {i}?"], enqueue=False)
        ]
        run_readings(
            settings,
            [reading],
            FakeEngine(_tokenizer(settings), lambda p: "notes" if "<section>" in p else "\\boxed{0000}"),
        )
        verdict = ("correct", None) if i == 1 else ("incorrect", None) if i == 4 else ("incorrect", str(1000 + i))
        out[doc.id] = feedback.add_feedback(settings, reading, *verdict).id
    assert sorted(out) == [1, 2, 3, 4, 5]
    return out


def _tokenizer(settings: Settings):
    from app.services.llm import tokenizer_for

    return tokenizer_for(settings)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("module", [shared, lifecycle, model_versions])
def test_doctests(module) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


# --- the service -----------------------------------------------------------------------------------


def test_a_bad_request_names_what_to_change_and_only_admins_may_act(sqlite_settings):
    s = sqlite_settings
    cases = [
        (SYNTHETIC, RunParams(sft_steps=-1, **TINY), r"sft_steps: Input should be greater than or equal to 0"),
        (SYNTHETIC, RunParams(**{**TINY, "extra": {"group_size": 1}}), r"group_size"),
        (SYNTHETIC, RunParams(sft_steps=0, rl_steps=0), r"sft_steps and rl_steps are both 0"),
        (DataSelection(lengths=(10,)), RunParams(), r"lengths: 10 is not a document length"),
        (DataSelection(lengths=()), RunParams(), r"lengths: give at least one"),
        (DataSelection(synthetic_kinds=("needle",)), RunParams(), r"synthetic_kinds: unknown 'needle'"),
        (DataSelection(qa_files=("/etc/passwd",)), RunParams(), r"qa_files: /etc/passwd is not one of"),
        (DataSelection(synthetic_kinds=()), RunParams(), r"the selection is empty"),
    ]
    for selection, params, message in cases:
        with pytest.raises(RunError, match=message):
            training_runs.start_run(s, selection, params)
    assert training_runs.list_runs(s) == []
    assert not s.training_dir.exists() or not any(s.training_dir.iterdir())  # nothing written for a refused run

    reader = add_user(s, "rita", "a-long-password", "reader")
    run = training_runs.start_run(s, SYNTHETIC, RunParams(sft_steps=1, rl_steps=0, **TINY))
    for call in (
        lambda: training_runs.start_run(s, SYNTHETIC, RunParams(), user=reader),
        lambda: training_runs.list_runs(s, user=reader),
        lambda: training_runs.get_run(s, run.id, user=reader),
        lambda: training_runs.run_log(s, run.id, user=reader),
        lambda: training_runs.data_overview(s, user=reader),
        lambda: training_runs.cancel_run(s, run.id, user=reader),
        lambda: training_runs.promote_run(s, run.id, user=reader),
    ):
        with pytest.raises(Forbidden):
            call()
    with pytest.raises(NotFound):
        training_runs.get_run(s, 999)
    with pytest.raises(NotFound):
        training_runs.start_run(s, SYNTHETIC, RunParams(**TINY), start_version_id=42)


def test_a_run_trains_at_its_start_versions_reading_sizes_whatever_the_form_says(sqlite_settings):
    """reading_config alone decides a run's sizes. The New run form's size boxes, pre-filled with the settings',
    replaced the start version's; the form has none now, and sizes sent in the API's `extra` change nothing."""
    from app.services.models import register_version
    from app.ui.training_views import FORM, parse_params

    assert not {"chunk_tokens", "memory_tokens", "answer_tokens", "template_set"} & set(FORM)
    s = sqlite_settings
    with session_scope(s.resolved_database_url) as db:
        wide = register_version(db, "wide", "smollm2", template_set="memagent", chunk_tokens=256, memory_tokens=64).id
    untouched = parse_params({"sft_steps": 1, "rl_steps": 0})
    sent = RunParams(sft_steps=1, rl_steps=0, extra={"chunk_tokens": 512, "memory_tokens": 48})
    for params in (untouched, sent):
        run = training_runs.start_run(s, SYNTHETIC, params, start_version_id=wide)
        sizes = [run.config[k] for k in ("chunk_tokens", "memory_tokens", "answer_tokens", "template_set")]
        assert sizes == [256, 64, s.answer_tokens, "memagent"], params
    # without a version of its own sizes, the settings' (what a reading with the bundled model gets)
    run = training_runs.start_run(s, SYNTHETIC, untouched)
    assert (run.config["chunk_tokens"], run.config["memory_tokens"]) == (s.chunk_tokens, s.memory_tokens)
    assert run.config["memory_policy"] == "generative"
    # and its memory policy: from a version that keeps sentences, the answer step learns on the memories it keeps
    with session_scope(s.resolved_database_url) as db:
        kept = register_version(db, "kept", "smollm2", template_set="memagent", memory_policy="extractive").id
    sent = RunParams(sft_steps=1, rl_steps=0, extra={"memory_policy": "generative"})
    assert training_runs.start_run(s, SYNTHETIC, sent, start_version_id=kept).config["memory_policy"] == "extractive"


def test_feedback_is_used_only_when_included_and_never_from_held_out_documents(sqlite_settings, tmp_path):
    s = sqlite_settings
    feedback_of = _judged(s)
    overview = training_runs.data_overview(s)
    assert sorted((f.document_id, f.held_out) for f in overview.feedback) == [
        (1, False),
        (2, False),
        (3, False),
        (4, False),
        (5, True),
    ]
    assert overview.feedback[0].username == "local" and overview.synthetic_kinds[0][0] == "single-needle"

    params = RunParams(sft_steps=1, rl_steps=0, **TINY)
    without = training_runs.start_run(s, SYNTHETIC, params)
    assert without.config["data"]["feedback"] == [] and not (Path(without.run_dir) / "data").exists()

    run = training_runs.start_run(s, DataSelection(include_feedback=True, lengths=(256,)), params)
    data = Path(run.run_dir) / "data"
    assert run.config["data"]["feedback"] == [str(data / "feedback-train.jsonl")]
    train, kept = _lines(data / "feedback-train.jsonl"), _lines(data / "feedback-heldout.jsonl")
    assert [r["document_id"] for r in train] == [1, 2, 3, 4] and [r["document_id"] for r in kept] == [5]
    assert all(r["document_text"].startswith(f"Ledger {r['document_id']}.") for r in train + kept)
    (case,) = _lines(data / "heldout-cases.jsonl")
    assert case == {
        "document": "docs/document-5.txt",
        "question": "What is the vault code of room 5?",
        "answers": ["1005"],
    }
    assert (data / "docs" / "document-5.txt").read_text().startswith("Ledger 5.")
    assert run.selection["feedback_readings"] == {"train": 4, "held_out": 1}
    config = json.loads((Path(run.run_dir) / "config.json").read_text())
    assert config == run.config and config["data"]["curriculum"] == [[256, 1]]

    # only the chosen feedback rows' readings
    chosen = training_runs.start_run(
        s, DataSelection(include_feedback=True, feedback_ids=(feedback_of[2],), synthetic_kinds=()), params
    )
    assert [r["document_id"] for r in _lines(Path(chosen.run_dir) / "data" / "feedback-train.jsonl")] == [2]
    # feedback given since tomorrow: there is none, and a run of nothing but it is refused
    with pytest.raises(RunError, match="feedback: of the 0 judged readings selected, none can be trained on"):
        training_runs.start_run(
            s, DataSelection(include_feedback=True, feedback_since=date.today() + timedelta(1)), params
        )
    # only held-out or untaught feedback: nothing to train on
    with pytest.raises(RunError, match="of the 2 judged readings selected, none"):
        training_runs.start_run(
            s, DataSelection(include_feedback=True, feedback_ids=(feedback_of[4], feedback_of[5])), params
        )

    previews = training_runs.preview_samples(s, DataSelection(include_feedback=True, lengths=(256,)), n=4)
    assert [p.source for p in previews] == ["feedback", "synthetic", "feedback", "synthetic"]
    # judged correct: the model's own answer is the gold; judged incorrect: the correction
    assert (previews[0].question, previews[0].answers, previews[2].answers) == (
        "What is the vault code of room 1?",
        ("0000",),
        ("1002",),
    )
    assert all("room 5" not in p.question for p in previews)
    assert 250 <= previews[1].doc_tokens <= 262


def test_queued_runs_wait_in_order_and_only_a_finished_run_is_promoted(sqlite_settings):
    s = sqlite_settings
    params = RunParams(sft_steps=2, rl_steps=1, **TINY)
    seconds, basis = training_runs.estimate_seconds(s, SYNTHETIC, params)
    assert seconds > 0 and "built-in figure" in basis
    first = training_runs.start_run(s, SYNTHETIC, params, name="first")
    second = training_runs.start_run(s, SYNTHETIC, params, name="second")
    assert (first.status, first.queue_position, second.queue_position) == ("queued", 1, 2)
    assert first.total_steps == 3 and first.estimate_s == seconds
    assert [r.name for r in training_runs.list_runs(s)] == ["second", "first"]

    assert training_runs.cancel_run(s, first.id).status == "cancelled"
    assert training_runs.get_run(s, second.id).queue_position == 1
    with pytest.raises(RunError, match=f"run {first.id} is cancelled: only a queued or running run"):
        training_runs.cancel_run(s, first.id)
    for call in (training_runs.promote_run, training_runs.evaluate_run):
        with pytest.raises(RunError, match=f"run {first.id} is cancelled: only a finished run"):
            call(s, first.id)
    resumed = training_runs.resume_run(s, first.id)
    assert (resumed.status, resumed.queue_position, resumed.resumable) == ("queued", 1, False)
    with pytest.raises(RunError, match="only a cancelled or failed run can be resumed"):
        training_runs.resume_run(s, first.id)


# --- with a real training worker -------------------------------------------------------------------


def TrainingWorker(settings: Settings, log: Path) -> WorkerGroup:
    """`longread worker --training`'s Celery command, in a process group of its own."""
    env = {
        **os.environ,
        "LONGREAD_DATA_DIR": str(settings.data_dir),
        "LONGREAD_DATABASE_URL": settings.database_url,
        "LONGREAD_BROKER_URL": settings.broker_url,
        "LONGREAD_MODEL_CACHE_DIR": str(settings.model_cache_dir),
        "LONGREAD_STALE_AFTER_S": str(settings.stale_after_s),
        "LONGREAD_ENGINE": settings.engine,
        "LONGREAD_MODEL": settings.model,
        "LONGREAD_EVAL_N": str(settings.eval_n),
        "OMP_NUM_THREADS": "1",
    }  # one thread: two stall each other beside other jobs (README)
    return WorkerGroup(worker_command(training=True), env, log, stop_timeout_s=60)


def _status(s: Settings, run_id: int) -> str:
    return training_runs.get_run(s, run_id).status


def _checkpoint_step(run_dir: Path) -> int:
    state = run_dir / "checkpoint" / "state.json"
    try:
        return json.loads(state.read_text())["step"]
    except (OSError, ValueError):
        return 0


def _trainers_of(run_dir: Path) -> list[int]:
    """Processes whose command line names the run's folder (its trainer)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(run_dir).encode() in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def _resumed_steps(log: str) -> list[tuple[int, int]]:
    """(step resumed at, the first step trained after it) for every resumption in a train.log."""
    out = []
    for m in re.finditer(r"resuming \S+ at step (\d+) of \d+\n(?:.*\n)*?step (\d+)/", log):
        out.append((int(m[1]), int(m[2])))
    return out


@pytest.mark.model
@pytest.mark.waits
def test_a_run_is_trained_evaluated_and_promoted_by_a_training_worker(tmp_path, own_postgres_url):
    s = _settings(tmp_path, own_postgres_url)
    _judged(s)
    run = training_runs.start_run(
        s, DataSelection(include_feedback=True, lengths=(256,)), RunParams(sft_steps=1, rl_steps=1, **TINY), name="tiny"
    )
    run_dir = Path(run.run_dir)
    worker = TrainingWorker(s, tmp_path / "worker.log")
    try:
        seen = set()

        def finished() -> bool:
            seen.add(_status(s, run.id))
            return _status(s, run.id) in ("done", "failed")

        wait_for(finished, 600, worker, "the run to finish")
        done = training_runs.get_run(s, run.id)
        assert done.status == "done", done.error
        assert "running" in seen
        metrics = training_runs.run_metrics(s, run.id)
        assert [m["step"] for m in metrics] == [1, 2] == list(range(1, done.total_steps + 1))
        assert [m["phase"] for m in metrics] == ["sft", "rl"] and done.step == 2
        assert {"reward", "accuracy", "loss", "kl", "clip_fraction", "groups_filtered", "tokens_per_s"} <= metrics[
            1
        ].keys()
        assert (run_dir / "adapter" / "adapter_config.json").is_file()
        assert done.attempts == 1 and done.finished_at >= done.started_at and done.eta_s is None
        (sample,) = training_runs.run_samples(s, run.id)
        assert sample["step"] == 2 and sample["question"] and len(sample["memories"]) == 2
        assert "training into" in training_runs.run_log(s, run.id) and "step 2/2 rl" in training_runs.run_log(s, run.id)
        assert (
            "this deployment's 1 finished run"
            in training_runs.estimate_seconds(s, SYNTHETIC, RunParams(sft_steps=1, rl_steps=1, **TINY))[1]
        )

        listed = subprocess.run(
            [sys.executable, "-m", "app.cli", "runs", "--json"],
            capture_output=True,
            text=True,
            env={**os.environ, "LONGREAD_DATABASE_URL": s.database_url, "LONGREAD_DATA_DIR": str(s.data_dir)},
            check=True,
            timeout=120,
        )
        (row,) = json.loads(listed.stdout)["runs"]
        assert (row["id"], row["name"], row["status"], row["step"], row["total_steps"]) == (
            run.id,
            "tiny",
            "done",
            2,
            2,
        )

        assert training_runs.evaluate_run(s, run.id).evaluation == {"status": "queued"}
        with pytest.raises(RunError, match="being evaluated already"):
            training_runs.evaluate_run(s, run.id)
        wait_for(
            lambda: training_runs.get_run(s, run.id).evaluation["status"] in ("done", "failed"),
            600,
            worker,
            "the evaluation",
        )
    finally:
        worker.stop()
    evaluation = training_runs.get_run(s, run.id).evaluation
    assert evaluation["status"] == "done", evaluation.get("error")
    for side in ("baseline", "candidate"):
        (row,) = evaluation[side]["summary"]
        assert (row["suite"], row["group"], row["n"]) == ("synthetic", "256", 2)
        misses = evaluation[side]["suites"]["synthetic"]  # where the misses happened, shown beside the table
        assert misses["answerable"] == 2 and sum(
            misses[k] for k in ("never-entered", "overwritten", "answer-missed")
        ) == (pytest.approx(1 - row["sub_em"]))
        assert evaluation[side]["cases"]["n"] == 1  # the held-out document's feedback
        assert evaluation[side]["cases"]["cases"][0]["question"] == "What is the vault code of room 5?"
    assert evaluation["baseline"]["label"] == "smollm2-reader-extractive"  # the bundled reader, seeded active
    assert evaluation["candidate"]["label"] == f"run {run.id}: tiny"
    assert (run_dir / "eval" / "candidate" / "results.json").is_file()
    progress = training_runs.eval_progress(run_dir)  # each command kept its count: all read, both sides
    assert progress.done == progress.total == 2 * (2 + 1) and progress.side == "candidate"

    version_id = training_runs.promote_run(s, run.id)
    with session_scope(s.resolved_database_url) as db:
        version = active_version(db)
        assert version.id == version_id and version.name == f"run-{run.id}-tiny"
        assert version.adapter_path == str(run_dir / "adapter") and version.training_run == str(run_dir)
        assert (version.base_model, version.chunk_tokens, version.memory_tokens) == ("smollm2", 128, 32)
        assert key_metrics(version.metrics) == {"256": evaluation["candidate"]["summary"][0]["sub_em"]}
        assert version.metrics["held_out_feedback"]["n"] == 1
    assert training_runs.get_run(s, run.id).version_id == version_id
    assert training_runs.promote_run(s, run.id) == version_id  # again: the same version, active

    # A reading asked now records the promoted version and is read with its weights.
    doc, _ = documents.add_document(s, "note.txt", b"The spare key hangs behind the barometer. " * 6)
    (reading_id,) = [r.id for r in readings.ask(s, doc.id, ["Where is the spare key?"], enqueue=False)]
    run_readings(s, [reading_id])
    with session_scope(s.resolved_database_url) as db:
        r = db.get(Reading, reading_id)
        assert (r.model_version_id, r.model, r.status.value) == (version_id, version.name, "done")
        assert (r.chunk_tokens, r.memory_tokens) == (128, 32)


@pytest.mark.model
@pytest.mark.waits
def test_a_cancelled_run_keeps_its_checkpoint_and_resumes_from_it(tmp_path, own_postgres_url):
    s = _settings(tmp_path, own_postgres_url)
    run = training_runs.start_run(s, SYNTHETIC, RunParams(sft_steps=4, rl_steps=0, **TINY))
    run_dir = Path(run.run_dir)
    env = {**os.environ, "LONGREAD_DATABASE_URL": s.database_url, "LONGREAD_DATA_DIR": str(s.data_dir)}
    worker = TrainingWorker(s, tmp_path / "worker.log")
    try:
        wait_for(lambda: _checkpoint_step(run_dir) >= 1, 300, worker, "the first checkpoint")
        out = subprocess.run(
            [sys.executable, "-m", "app.cli", "runs", "cancel", str(run.id)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        assert out.stdout.strip() == f"run {run.id}: cancelling"
        wait_for(lambda: _status(s, run.id) == "cancelled", 300, worker, "the cancel")
        cancelled = training_runs.get_run(s, run.id)
        stopped_at = _checkpoint_step(run_dir)
        assert 1 <= stopped_at < 4 and cancelled.resumable and cancelled.step == stopped_at
        assert [m["step"] for m in _lines(run_dir / "metrics.jsonl")] == list(range(1, stopped_at + 1))
        assert not (run_dir / "adapter").exists() and not (run_dir / "STOP").exists()

        assert training_runs.resume_run(s, run.id).status == "queued"
        wait_for(lambda: _status(s, run.id) in ("done", "failed"), 600, worker, "the resumed run")
    finally:
        worker.stop()
    done = training_runs.get_run(s, run.id)
    assert done.status == "done", done.error
    assert (done.attempts, done.step) == (1, 4)  # resuming starts the attempts count again (one claim since)
    assert [m["step"] for m in _lines(run_dir / "metrics.jsonl")] == [1, 2, 3, 4]
    assert _resumed_steps((run_dir / "train.log").read_text()) == [(stopped_at, stopped_at + 1)]


@pytest.mark.model
@pytest.mark.waits
def test_a_run_whose_worker_is_killed_goes_on_from_its_checkpoint(tmp_path, own_postgres_url):
    s = _settings(tmp_path, own_postgres_url)
    run = training_runs.start_run(s, SYNTHETIC, RunParams(sft_steps=3, rl_steps=0, **TINY))
    run_dir = Path(run.run_dir)
    first = TrainingWorker(s, tmp_path / "worker1.log")
    try:
        wait_for(lambda: _checkpoint_step(run_dir) >= 1, 300, first, "the first checkpoint")
    finally:
        first.kill()
    deadline = time.monotonic() + 15
    while _trainers_of(run_dir) and time.monotonic() < deadline:  # the trainer dies with its worker
        time.sleep(0.2)
    assert _trainers_of(run_dir) == []
    assert _status(s, run.id) == "running" and _checkpoint_step(run_dir) < 3

    second = TrainingWorker(s, tmp_path / "worker2.log")
    try:
        wait_for(lambda: _status(s, run.id) in ("done", "failed"), 600, second, "the run, taken up again")
    finally:
        second.stop()
    done = training_runs.get_run(s, run.id)
    assert done.status == "done", done.error
    assert done.attempts == 2
    assert [m["step"] for m in _lines(run_dir / "metrics.jsonl")] == [1, 2, 3]  # each step once
    ((resumed_at, next_step),) = _resumed_steps((run_dir / "train.log").read_text())
    assert resumed_at >= 1 and next_step == resumed_at + 1  # from the checkpoint, not from step 1
    assert "its worker stopped beating; queued again" in (tmp_path / "worker2.log").read_text()


def test_a_run_whose_worker_keeps_dying_fails_at_the_attempts_cap_and_resuming_counts_again(sqlite_settings):
    from app.models import TrainingRun, utcnow
    from app.services.train_runner import sweep

    s = sqlite_settings.model_copy(update={"max_attempts": 2})
    ids = [training_runs.start_run(s, SYNTHETIC, RunParams(sft_steps=1, rl_steps=0, **TINY)).id for _ in range(2)]
    dead = utcnow() - timedelta(seconds=60)
    with session_scope(s.resolved_database_url) as db:  # both claimed by workers that died: one at its 2nd attempt
        for run_id, attempts in zip(ids, (1, 2)):
            run = db.get(TrainingRun, run_id)
            run.status, run.attempts, run.heartbeat_at, run.step, run.worker = "running", attempts, dead, 3, "gone"
    sweep(s, idle=False)
    again, capped = (training_runs.get_run(s, i) for i in ids)
    assert (again.status, again.error) == ("queued", None)
    assert capped.status == "failed"
    assert capped.error.startswith("the training worker stopped 2 times while training this (last at step 3)")
    resumed = training_runs.resume_run(s, capped.id)
    assert (resumed.status, resumed.attempts, resumed.error) == ("queued", 0, None)
