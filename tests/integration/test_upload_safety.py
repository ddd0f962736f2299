"""Hostile uploads through the real API and the parse sandbox: each gets a clear outcome, the
app keeps serving, and a document uploaded before is untouched. Plus the sandbox's own limits:
time, CPU and memory, and a parser process that dies."""

from __future__ import annotations

import os
import signal
import time

import pytest
from fastapi.testclient import TestClient

from app.documents import sandbox
from app.documents.base import ParseError
from app.documents.sandbox import ParseLimits, parse_untrusted
from app.web import create_app
from tests import docgen
from tests.hostile import hostile_inputs, outcome, told

pytestmark = pytest.mark.integration

HOSTILE = hostile_inputs(bomb_mib=96)  # built lazily, on first use of .data


@pytest.fixture(scope="module")
def app_client(tmp_path_factory):
    from app.migrate import upgrade
    from app.settings import Settings
    from tests.conftest import MODEL_CACHE

    settings = Settings(data_dir=tmp_path_factory.mktemp("safety") / "data", model_cache_dir=MODEL_CACHE)
    upgrade(settings.resolved_database_url)
    with TestClient(create_app(settings)) as client:
        good = client.post("/api/documents", files={"file": ("lighthouse.docx", docgen.to_docx(docgen.small_book()))})
        assert good.json()["status"] == "ready", good.text
        yield client, settings, good.json()


@pytest.mark.parametrize("h", HOSTILE, ids=[h.name for h in HOSTILE])
def test_hostile_upload(app_client, h):
    client, settings, good = app_client
    r = client.post("/api/documents", files={"file": (h.filename, h.data, "application/pdf")})
    assert (outcome(r.status_code, r.json()), h.expect in told(r.status_code, r.json())) == (h.outcome, True), r.text
    if r.status_code == 201:
        doc = r.json()
        assert len(doc["title"]) <= 300 and "/" not in doc["title"]
        assert doc["format"] == "unknown" if doc["status"] == "failed" else doc["format"] == "txt"
    # the app keeps serving, the earlier document is untouched, a new upload still parses
    assert client.get("/healthz").status_code == 200
    again = client.get(f"/api/documents/{good['id']}").json()
    assert {k: again[k] for k in ("status", "char_count", "token_count", "pages")} == {
        k: good[k] for k in ("status", "char_count", "token_count", "pages")
    }
    assert client.post("/api/documents", files={"file": ("ok.txt", b"Still parsing fine.")}).json()["status"] == "ready"
    # nothing is ever written under a client's file name: only SHA-256-named blobs and the database
    for path in settings.data_dir.rglob("*"):
        rel = path.relative_to(settings.data_dir)
        assert rel.parts[0] in {"blobs", "longread.db", "longread.db-wal", "longread.db-shm", "broker.db"}, rel
        if path.is_file() and rel.parts[0] == "blobs":
            assert len(path.name) == 64 and path.parent.name == path.name[:2]


def test_non_utf8_text_reads_correctly(app_client):
    client, _, _ = app_client
    doc = client.post(
        "/api/documents", files={"file": ("cafe.txt", "Caf\u00e9 \u201cna\u00efve\u201d".encode("cp1252"))}
    ).json()
    got = client.get(f"/api/documents/{doc['id']}").json()
    assert got["status"] == "ready" and got["char_count"] == len("Caf\u00e9 \u201cna\u00efve\u201d")


def test_parse_that_runs_too_long_is_stopped():
    epub = docgen.to_epub(docgen.books()["pg84"])  # pandoc needs seconds for a whole novel
    t = time.monotonic()
    with pytest.raises(ParseError, match="took too long to parse"):
        parse_untrusted(epub, ParseLimits(timeout_s=0.3))
    assert time.monotonic() - t < 5


def test_parse_over_its_cpu_limit_is_stopped():
    docx = docgen.to_docx(docgen.books()["pg37106"])  # Little Women: seconds of CPU in python-docx
    with pytest.raises(ParseError, match="took too long to parse"):
        parse_untrusted(docx, ParseLimits(cpu_s=1))


def test_parse_over_its_memory_limit_is_stopped():
    html = docgen.to_html(docgen.books()["pg37106"])
    with pytest.raises(ParseError, match="memory"):
        parse_untrusted(html, ParseLimits(memory_mb=20))


def test_a_dead_parser_process_is_replaced():
    sandbox.warm_up()
    zygote = sandbox._ZYGOTE._proc
    os.kill(zygote.pid, signal.SIGKILL)
    zygote.wait()
    assert parse_untrusted(b"Life goes on.").text == "Life goes on."
    assert sandbox._ZYGOTE._proc.pid != zygote.pid


def test_a_parse_child_that_crashes_becomes_a_parse_error(monkeypatch):
    # the child inherits nothing from this process: crash it from outside, mid-parse
    epub = docgen.to_epub(docgen.books()["pg84"])
    import threading

    def kill_children():
        time.sleep(0.5)
        for pid in _children(sandbox._ZYGOTE._proc.pid):
            os.kill(pid, signal.SIGSEGV)

    threading.Thread(target=kill_children, daemon=True).start()
    with pytest.raises(ParseError, match="without an answer|failed"):
        parse_untrusted(epub)
    assert parse_untrusted(b"Still here.").text == "Still here."


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out
