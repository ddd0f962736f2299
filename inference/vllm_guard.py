"""Ties a vLLM server's whole process group to the life of the process that started it.

    python vllm_guard.py FD GRACE_S -- python -m vllm.entrypoints.openai.api_server ...

`inference.vllm_server.VLLMServer` starts this script (with vLLM's interpreter; it needs only the
standard library) as the leader of a new process group. It starts the server as its child, in that
group, and reads FD: the read end of a pipe whose only write end the starting process holds. The
kernel closes that end however the starting process ends (exit, SIGKILL, a crash), so reading FD
returns end-of-file exactly then, with no window: the pipe exists before anything is forked. The
guard then stops the whole group, the server and whatever it forked (vLLM's engine core and model
workers): SIGTERM, then SIGKILL after GRACE_S.

Why not PR_SET_PDEATHSIG on the server alone: it only sends the server SIGTERM, and a vLLM server
that is still starting does not act on it (its engine core ignores SIGTERM until it has loaded the
model, and the API server waits for it), so a worker killed during a vLLM start-up left the server
and its engine core running, reparented to init. The death signal is also tied to the forking
*thread*, and there is a window between fork and prctl.

The guard exits with the server's exit code when the server exits on its own (after stopping
what the server left in the group), so its owner sees the server's code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time


def _others_alive() -> bool:
    """Whether a process of our group other than us still runs (zombies do not count)."""
    me, group = os.getpid(), os.getpgrp()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


def stop_group(grace_s: float) -> None:
    """SIGTERM to every process of our group, SIGKILL to what is left after grace_s (us included)."""
    os.killpg(os.getpgrp(), signal.SIGTERM)  # we ignore it (see main)
    deadline = time.monotonic() + grace_s
    while _others_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    if _others_alive():
        os.killpg(os.getpgrp(), signal.SIGKILL)


def main(argv: list[str]) -> int:
    fd, grace_s, sep, command = int(argv[0]), float(argv[1]), argv[2], argv[3:]
    if sep != "--" or not command:
        raise SystemExit("usage: vllm_guard.py FD GRACE_S -- COMMAND...")
    # The owner stops the server by signalling the whole group: the server acts on the signal, the
    # guard waits for it to exit and then clears the group. (A handler, unlike SIG_IGN, is not
    # inherited by the server across exec.)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    server = subprocess.Popen(command)  # our child, in our group; it does not inherit FD

    def watch() -> None:
        while os.read(fd, 4096):  # b"" once the owner's write end is closed: the owner is gone
            pass
        stop_group(grace_s)
        os._exit(0)

    # Started after the server, so a server started just as the owner died is stopped too.
    threading.Thread(target=watch, name="owner-watch", daemon=True).start()
    code = server.wait()
    stop_group(grace_s)  # what the server left behind (an engine core that outlived it)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
