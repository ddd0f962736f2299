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
from inference.vllm_server import VLLMServer, group_alive

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
    if mode == "crash":
        print("RuntimeError: no KV cache space", flush=True)
        sys.exit(3)
    if mode == "stubborn":
        signal.signal(signal.SIGTERM, lambda *_: print("ignoring SIGTERM", flush=True))
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

    HTTPServer((args.host, args.port), H).serve_forever()
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
        assert os.getpgid(child) == leader  # the engine-core stand-in is in the server's group
        log = (fake_vllm / "logs" / "vllm.log").read_text()
        assert "--served-model-name model" in log and "--enforce-eager" in log
        assert server.started_in_s is not None
    assert server.process is None
    assert not group_alive(leader)


def test_a_server_that_died_is_restarted_on_the_same_port(fake_vllm):
    with server_for(fake_vllm) as server:
        port, (leader, _) = server.port, pids(fake_vllm)
        os.killpg(leader, signal.SIGKILL)
        server.process.wait(timeout=10)
        assert not server.healthy()
        server.ensure_running()
        assert server.healthy() and server.port == port
        assert pids(fake_vllm)[0] != leader
        server.ensure_running()  # running: nothing to do
        assert pids(fake_vllm)[0] == server.process.pid


def test_a_server_that_ignores_sigterm_is_killed(fake_vllm):
    server = server_for(fake_vllm, mode="stubborn")
    server.start()
    leader, _ = pids(fake_vllm)
    started = time.monotonic()
    server.stop(timeout_s=1.0)
    assert time.monotonic() - started < 15
    assert not group_alive(leader)


def test_a_server_that_exits_while_starting_is_reported_with_its_log(fake_vllm):
    with pytest.raises(EngineError, match=r"exited with code 3 while starting(.|\n)*no KV cache space"):
        server_for(fake_vllm, mode="crash").start()


def test_a_server_that_never_gets_healthy_times_out_and_is_stopped(fake_vllm):
    server = server_for(fake_vllm, mode="hang", startup_timeout_s=3)
    with pytest.raises(EngineError, match=r"not healthy within 3 s"):
        server.start()
    leader, _ = pids(fake_vllm)
    assert server.process is None
    assert not group_alive(leader)


def test_a_missing_vllm_install_says_how_to_get_one(tmp_path):
    with pytest.raises(EngineError, match="make vllm"):
        VLLMServer(tmp_path / "nope" / "python", tmp_path).start()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_the_server_dies_with_a_killed_parent(fake_vllm):
    """A worker killed with SIGKILL runs no cleanup: the kernel still stops its vLLM server."""
    code = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from tests.unit.test_vllm_server import server_for
        from pathlib import Path
        server_for(Path({str(fake_vllm)!r})).start()
        print("ready", flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout.readline().strip() == "ready"
        leader, _ = pids(fake_vllm)
        assert group_alive(leader)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(leader) and time.monotonic() < deadline:
            time.sleep(0.1)
        # The kernel sent the leader SIGTERM. (Real vLLM then stops its engine core itself; the
        # stand-in's child is left to the cleanup below.)
        assert not _alive(leader)
    finally:
        parent.kill()
        if (fake_vllm / "pids").exists():
            try:
                os.killpg(pids(fake_vllm)[0], signal.SIGKILL)
            except ProcessLookupError:
                pass


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
