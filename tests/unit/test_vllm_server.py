"""The vLLM supervisor against a stand-in `vllm` package (a tiny HTTP server with the same command
line): start-up, health check, a server that dies or hangs while starting, clean and forced
shutdown of the whole process group, and the server dying with a killed parent. The real server is
exercised in tests/integration/test_vllm_engine.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from inference.engines.base import EngineError
from inference.vllm_server import DEFAULT_ARGS, VLLMServer, cpu_dtype, group_alive

#: a parent killed milliseconds into a start-up, and a group cleared within seconds: run first, alone (tests/suite.py);
#: with the rest of the suite beside them, niced or not, one kill point's processes outlived the 20 s wait
pytestmark = pytest.mark.timing

FAKE_SERVER = textwrap.dedent(
    """
    import argparse, os, signal, subprocess, sys, time
    from http.server import BaseHTTPRequestHandler, HTTPServer

    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int)
    p.add_argument("--host")
    args, _ = p.parse_known_args()
    mode = os.environ.get("FAKE_MODE", "ok")
    print("fake vllm starting", sys.argv[1:], flush=True)

    def stage(name):
        with open(os.environ["FAKE_PIDS"] + ".stages", "a") as f:
            f.write(name + "\\n")

    stage("importing")
    if mode == "crash":
        print("RuntimeError: no KV cache space", flush=True)
        sys.exit(3)
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, lambda *_: print("ignoring SIGTERM", flush=True))
    if mode == "vllm":
        # Like vLLM starting: SIGTERM kills it while it imports; then it starts its engine core,
        # which ignores SIGTERM until it has loaded the model, and waits for it, doing nothing
        # on SIGTERM; once serving, SIGTERM stops the engine core and the server.
        time.sleep(0.3)
        signal.signal(signal.SIGTERM, lambda *_: print("SIGTERM while starting: ignored", flush=True))
        child = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                                  "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
        stage("engine")
        time.sleep(0.3)

        def _stop(*_):
            child.kill()
            sys.exit(0)

        signal.signal(signal.SIGTERM, _stop)
    else:
        # a child in the same process group, like vLLM's engine core
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(os.environ["FAKE_PIDS"], "w") as f:
        f.write(f"{os.getpid()} {child.pid}")
    if mode == "hang":
        time.sleep(600)

    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
        def log_message(self, *a):
            pass

    httpd = HTTPServer((args.host, args.port), H)
    stage("serving")
    httpd.serve_forever()
    """
)


@pytest.fixture
def fake_vllm(tmp_path: Path) -> Path:
    pkg = tmp_path / "site" / "vllm" / "entrypoints" / "openai"
    pkg.mkdir(parents=True)
    for d in (pkg, pkg.parent, pkg.parent.parent):
        (d / "__init__.py").write_text("")
    (pkg / "api_server.py").write_text(FAKE_SERVER)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    return tmp_path


def server_for(root: Path, mode: str = "ok", **kw) -> VLLMServer:
    env = {"PYTHONPATH": str(root / "site"), "FAKE_MODE": mode, "FAKE_PIDS": str(root / "pids")}
    return VLLMServer(sys.executable, root / "model", env=env, log_path=root / "logs" / "vllm.log", **kw)


def pids(root: Path) -> list[int]:
    return [int(p) for p in (root / "pids").read_text().split()]


def test_starts_waits_for_health_and_stops_the_whole_group(fake_vllm):
    server = server_for(fake_vllm)
    with server:
        assert server.healthy()
        assert httpx.get(server.base_url.removesuffix("/v1") + "/health").status_code == 200
        leader, child = pids(fake_vllm)
        group = server.process.pid  # the guard leads the group; the server and its child are in it
        assert os.getpgid(leader) == os.getpgid(child) == group != leader
        log = (fake_vllm / "logs" / "vllm.log").read_text()
        assert "--served-model-name model" in log and "--enforce-eager" in log
        assert server.started_in_s is not None
    assert server.process is None
    assert not group_alive(group)


def test_a_server_that_died_is_restarted_on_the_same_port(fake_vllm):
    with server_for(fake_vllm) as server:
        port, (leader, _) = server.port, pids(fake_vllm)
        os.kill(leader, signal.SIGKILL)  # the server crashes: the guard exits with its code
        assert server.process.wait(timeout=30) == 128 + signal.SIGKILL
        assert not server.healthy()
        server.ensure_running()
        assert server.healthy() and server.port == port
        assert pids(fake_vllm)[0] != leader
        server.ensure_running()  # running: nothing to do
        assert os.getpgid(pids(fake_vllm)[0]) == server.process.pid


def test_a_server_that_ignores_sigterm_is_killed(fake_vllm):
    server = server_for(fake_vllm, mode="stubborn")
    server.start()
    group = server.process.pid
    started = time.monotonic()
    server.stop(timeout_s=1.0)
    assert time.monotonic() - started < 15
    assert not group_alive(group)


def test_a_server_that_exits_while_starting_is_reported_with_its_log(fake_vllm):
    with pytest.raises(EngineError, match=r"exited with code 3 while starting(.|\n)*no KV cache space"):
        server_for(fake_vllm, mode="crash").start()


def test_a_server_that_never_gets_healthy_times_out_and_is_stopped(fake_vllm):
    server = server_for(fake_vllm, mode="hang", startup_timeout_s=3)
    with pytest.raises(EngineError, match=r"not healthy within 3 s"):
        server.start()
    leader, child = pids(fake_vllm)
    assert server.process is None
    assert not _alive(leader) and not _alive(child)


def test_a_missing_vllm_install_says_how_to_get_one(tmp_path):
    with pytest.raises(EngineError, match="make vllm"):
        VLLMServer(tmp_path / "nope" / "python", tmp_path).start()


#: Where the parent is killed: seconds after it calls start() (the fork and exec of the guard, the
#: guard starting the server), or when the server reaches a stage of its start-up, or once healthy.
KILL_POINTS = [0.0, 0.002, 0.005, 0.01, 0.02, 0.04, 0.07, 0.1, 0.15, 0.2, "importing", "engine", "serving", "ready"]


@pytest.mark.parametrize("point", KILL_POINTS, ids=str)
def test_a_killed_parent_takes_the_whole_server_group_with_it(fake_vllm, point):
    """A worker killed with SIGKILL runs no cleanup: whenever that happens during its server's
    start-up, the server and everything it forked stop (a vLLM server that ignores SIGTERM while
    starting included)."""
    code = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from tests.unit.test_vllm_server import server_for
        from pathlib import Path
        server = server_for(Path({str(fake_vllm)!r}), mode="vllm", orphan_grace_s=1.0)
        print("starting", flush=True)
        server.start()
        print("ready", flush=True)
        time.sleep(600)
        """
    )
    stages = fake_vllm / "pids.stages"
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "starting"
        if isinstance(point, float):
            time.sleep(point)
        elif point == "ready":
            assert parent.stdout.readline().strip() == "ready"
        else:
            deadline = time.monotonic() + 60
            while not (stages.exists() and point in stages.read_text().split()):
                assert time.monotonic() < deadline, f"the server never reached {point!r}"
                time.sleep(0.005)
        parent.kill()
        parent.wait(timeout=10)
        deadline = time.monotonic() + 20
        while _processes_of(fake_vllm) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _processes_of(fake_vllm)
        assert not left, f"killed at {point!r}; still running: {left} (stages: {_read(stages)})"
    finally:
        parent.kill()
        for pid in _processes_of(fake_vllm):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _processes_of(root: Path) -> list[int]:
    """Live processes started for the fake server in `root` (the guard, the server, its child),
    found by the environment they inherit, wherever they were reparented."""
    marker = f"FAKE_PIDS={root / 'pids'}".encode()
    found = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                if marker in (d / "environ").read_bytes().split(b"\0") and _alive(int(d.name)):
                    found.append(int(d.name))
            except OSError:
                pass
    return found


def _read(path: Path) -> str:
    return path.read_text().replace("\n", " ") if path.exists() else ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.parametrize(
    ("flags", "dtype"),
    [
        ("flags\t\t: fpu sse2 avx avx2 fma", "float32"),  # AVX2 only: bfloat16 would be emulated
        ("flags\t\t: fpu avx2 avx512f avx512bw", "float32"),  # AVX-512 without its BF16 extension
        ("flags\t\t: fpu avx2 avx512f avx512_bf16", "bfloat16"),
        ("flags\t\t: fpu avx2 amx_bf16 amx_tile", "bfloat16"),
        ("Features\t: fp asimd bf16 i8mm", "bfloat16"),  # Arm
        ("model name\t: bf16 in a name is not a flag", "float32"),
    ],
)
def test_vllm_computes_in_bfloat16_only_where_the_cpu_has_bfloat16_instructions(flags: str, dtype: str) -> None:
    assert cpu_dtype(f"processor\t: 0\n{flags}\n") == dtype


def test_the_default_flags_use_this_machines_dtype() -> None:
    assert DEFAULT_ARGS[DEFAULT_ARGS.index("--dtype") + 1] == cpu_dtype()
