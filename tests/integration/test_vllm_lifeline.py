"""A real vLLM server outlives no process that started it: the owner is killed with SIGKILL while
the server is still starting, once its engine core is up (the window in which vLLM does not act on
SIGTERM: the server and its engine core used to be left running, reparented to init). The same kill
at many points of a start-up runs against a stand-in server in tests/unit/test_vllm_server.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from inference.vllm_server import group_pids, proc_stat
from tests.conftest import MODEL_CACHE
from tests.integration.conftest import REPO_ROOT, VLLM_PYTHON

pytestmark = [pytest.mark.integration, pytest.mark.model, pytest.mark.waits]  # tests/suite.py: beside the model side


def _children(pid: int) -> list[int]:
    return [int(d) for d in os.listdir("/proc") if d.isdigit() and (f := proc_stat(d)) and int(f[1]) == pid]


def _names(pids: list[int]) -> list[str]:
    out = []
    for pid in pids:
        try:
            out.append(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()[:100])
        except OSError:
            pass
    return out


def test_a_worker_killed_while_its_vllm_server_starts_leaves_nothing_behind(tmp_path):
    if not VLLM_PYTHON.is_file():
        pytest.fail(f"vLLM is not installed at {VLLM_PYTHON}: run `make vllm` (make test does it)", pytrace=False)
    code = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(REPO_ROOT)!r})
        from app.settings import Settings
        from app.services.llm import engine_for
        print("starting", flush=True)
        engine_for(Settings(engine="vllm-local", vllm_python={str(VLLM_PYTHON)!r}, data_dir={str(tmp_path)!r},
                            model_cache_dir={str(MODEL_CACHE)!r}))
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    group = None
    try:
        assert parent.stdout.readline().strip() == "starting"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            kids = _children(parent.pid)
            group = kids[0] if kids else group
            # the guard, the API server, its resource tracker and the engine core: the engine is starting
            if group and any("EngineCore" in n for n in _names(group_pids(group))):
                break
            assert parent.poll() is None, "the parent died before its server started its engine"
            time.sleep(0.2)
        else:
            pytest.fail(
                f"the vLLM server never started its engine core; log:\n{(tmp_path / 'vllm.log').read_text()[-3000:]}"
            )
        parent.kill()
        parent.wait(timeout=10)
        deadline = time.monotonic() + 60
        while group_pids(group) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = _names(group_pids(group))
        assert not left, f"still running after the parent was killed: {left}"
    finally:
        parent.kill()
        if group is not None:
            for pid in group_pids(group):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
