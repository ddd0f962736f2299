"""Parse untrusted bytes in a child process with memory, CPU and wall-clock limits.

A small "zygote" process (`python -m app.documents.sandbox`) imports the parsers once (~3 s for
`unstructured`) and then forks one fresh child per parse, so a parse starts in milliseconds and no
state leaks from one upload into the next. We do not fork the calling process itself: the web app
and the worker run threads, and a fork of a threaded process can deadlock on a lock held by another
thread. (multiprocessing's "forkserver" does the same job but re-imports the caller's `__main__`
in every child.)

The child:
- leads its own process group, so pandoc (which it starts for EPUB) dies with it;
- caps its address space (RLIMIT_AS) at what the zygote already maps plus `memory_mb`, its CPU
  time (RLIMIT_CPU) at `cpu_s`, the files it writes (RLIMIT_FSIZE) and core dumps (none);
- refuses network connections (the parsers need none; see app/documents/rich.py);
- answers with the ParsedDocument or the ParseError's message.
The caller waits at most `timeout_s`, then kills the child's group. Whatever happens in the child
(a crash, a segfault in a C extension, running out of memory or time) becomes a ParseError whose
message the user sees; the web app or worker that asked carries on.
"""

from __future__ import annotations

import atexit
import os
import re
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

from app.documents.base import ParsedDocument, ParseError
from app.documents.detect import ZIP_LIMITS, ZipLimits


@dataclass(frozen=True)
class ParseLimits:
    #: wall-clock seconds before the parse is killed; the largest test book parses in ~10 s here
    timeout_s: float = 120.0
    #: CPU seconds (RLIMIT_CPU) of the parsing process
    cpu_s: int = 120
    #: address space (MiB) the parse may add to what the zygote maps (RLIMIT_AS); pandoc, started
    #: for EPUB, gets the same cap of its own
    memory_mb: int = 2048
    #: largest file (MiB) the parse may write: the EPUB's temporary copy for pandoc
    file_mb: int = 128
    zip: ZipLimits = field(default_factory=lambda: ZIP_LIMITS)


DEFAULT_LIMITS = ParseLimits()

TOO_SLOW = "the file took too long to parse (more than {:.0f} s); it may be damaged or built to stall parsers"
TOO_BIG = "the file needs more memory to parse than the {} MiB allowed; it may be damaged or a compression bomb"
DIED = "the parser stopped on this file without an answer (out of memory or a crash); it may be damaged"
CRASHED = "the parser failed on this file ({}); it may be damaged"
_ROOT = Path(__file__).resolve().parents[2]


class _Zygote:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: str | None = None

    @property
    def socket_path(self) -> str:
        assert self._dir is not None
        return os.path.join(self._dir, "zygote.sock")

    def ensure_running(self) -> str:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            return self.socket_path

    def _start(self) -> None:
        from app.documents.rich import OFFLINE_ENV

        self.stop_unlocked()
        self._dir = tempfile.mkdtemp(prefix="longread-parse-")
        env = {
            **os.environ,
            **OFFLINE_ENV,
            "PYTHONPATH": os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH")) if p),
        }
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "app.documents.sandbox", self.socket_path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env=env,
            cwd=str(_ROOT),
        )
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], 120)
        line = self._proc.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            self.stop_unlocked()
            raise RuntimeError("the document parser process did not start")

    def stop_unlocked(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._proc is not None and self._proc.stdout is not None:
            self._proc.stdout.close()
        self._proc = None
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def stop(self) -> None:
        with self._lock:
            self.stop_unlocked()


_ZYGOTE = _Zygote()
atexit.register(_ZYGOTE.stop)


def warm_up() -> None:
    """Start the parser process now rather than on the first upload (it imports for ~3 s)."""
    _ZYGOTE.ensure_running()


def parse_untrusted(data: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Parse `data` in a sandboxed child; any failure is a ParseError with a message for the user."""
    path = _ZYGOTE.ensure_running()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        _ZYGOTE.stop()  # a zygote that cannot be reached is replaced
        path = _ZYGOTE.ensure_running()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
    conn = Connection(sock.detach())
    start = time.monotonic()
    pid = None
    try:
        if not conn.poll(30):
            raise ParseError(DIED)
        pid = conn.recv()
        conn.send(limits)
        conn.send_bytes(data)
        remaining = limits.timeout_s - (time.monotonic() - start)
        if not conn.poll(max(remaining, 0.0)):
            raise ParseError(TOO_SLOW.format(limits.timeout_s))
        try:
            kind, value = conn.recv()
        except (EOFError, OSError):
            raise ParseError(DIED) from None
        pid = None  # it answered and exits by itself; its pid may soon belong to another process
    except (EOFError, BrokenPipeError, ConnectionResetError):
        raise ParseError(DIED) from None
    finally:
        conn.close()
        if pid is not None:
            _kill_group(pid)
    if kind == "ok":
        return value
    if kind == "error":
        raise ParseError(value)
    if kind == "memory":
        raise ParseError(TOO_BIG.format(limits.memory_mb))
    if kind == "cpu":
        raise ParseError(TOO_SLOW.format(limits.cpu_s))
    raise ParseError(CRASHED.format(value))


def _kill_group(pid: int) -> None:
    """The child leads its own process group: kill it with anything it started (pandoc)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ---------------------------------------------------------------------------------------------
# The zygote and its children (this module run as `python -m app.documents.sandbox SOCKET`)
# ---------------------------------------------------------------------------------------------


class _CpuExceeded(BaseException):
    pass


def _on_sigxcpu(_signum: int, _frame: object) -> None:
    raise _CpuExceeded


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        m = re.search(r"VmSize:\s+(\d+) kB", f.read())
    return int(m.group(1)) * 1024 if m else 0


def _set_limits(limits: ParseLimits) -> None:
    mem = _vm_bytes() + limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    # soft limit: SIGXCPU, which we turn into an answer; hard limit 5 s later: SIGKILL
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
    size = limits.file_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXCPU, _on_sigxcpu)


def _deny_network() -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError("network access is disabled while parsing")

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    socket.getaddrinfo = refuse  # type: ignore[assignment]
    socket.create_connection = refuse  # type: ignore[assignment]


def _serve_child(conn: Connection) -> None:
    from app.documents.parsing import parse

    os.setsid()
    conn.send(os.getpid())
    limits: ParseLimits = conn.recv()
    data = conn.recv_bytes()
    outcome: tuple[str, object]
    try:
        _set_limits(limits)
        _deny_network()
        outcome = ("ok", parse(data, limits.zip))
    except ParseError as exc:
        outcome = ("error", str(exc))
    except (MemoryError, SystemError):
        # A C extension (lxml) whose allocation fails under the address-space cap returns an error
        # without setting one, which CPython reports as SystemError: this child ran out of memory.
        outcome = ("memory", "")
    except _CpuExceeded:
        outcome = ("cpu", "")
    except RecursionError:
        outcome = ("error", "the file is damaged or unreadable: its structure nests too deeply")
    except Exception as exc:
        outcome = ("crash", f"{type(exc).__name__}: {exc}"[:300])
    del data
    try:
        conn.send(outcome)
    except MemoryError:
        conn.send(("memory", ""))


def _zygote_main(socket_path: str) -> None:
    import app.documents.preload  # noqa: F401 - the parsers, loaded once, shared by every child

    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    os.chmod(socket_path, 0o600)
    listener.listen(64)
    listener.settimeout(1.0)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # nothing more goes to the caller's pipe (a chatty parser would fill it)
    os.close(devnull)
    while os.getppid() == parent:  # the caller died: so do we
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        try:
            client, _ = listener.accept()
        except TimeoutError:
            continue
        if os.fork() == 0:
            code = 0
            try:
                listener.close()
                client.settimeout(None)
                _serve_child(Connection(client.detach()))
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        client.close()


if __name__ == "__main__":
    _zygote_main(sys.argv[1])
