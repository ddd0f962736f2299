"""`unstructured` must work with no network at all: no spaCy model download, no telemetry ping.
Proved with every socket connection refused, in this process and in a fresh interpreter."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from app.documents.parsing import parse
from tests import docgen

ROOT = Path(__file__).resolve().parents[2]


def test_every_format_parses_with_the_network_refused(monkeypatch):
    attempts: list[tuple] = []

    def refuse(*args, **_kwargs):
        attempts.append(args[1:] if args else ())
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    book = docgen.small_book()
    for fmt in docgen.FORMATS:
        parsed = parse(docgen.convert(book, fmt))
        assert parsed.format == fmt and "One night a storm broke the glass." in parsed.text
    assert attempts == []
    assert "spacy" not in sys.modules  # the NLP step is bypassed, not merely lucky


# Runs in a fresh interpreter with a clean environment (no DO_NOT_TRACK set beforehand): sockets
# are refused before anything of ours or unstructured's is imported.
_SCRIPT = r"""
import json, socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args[1:]))
    raise OSError("network disabled by the test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.getaddrinfo = refuse
from app.documents.parsing import parse
from tests import docgen
book = docgen.small_book()
formats = {fmt: parse(docgen.convert(book, fmt)).format for fmt in docgen.FORMATS}
print(json.dumps({"formats": formats, "attempts": attempts, "spacy": "spacy" in sys.modules,
                  "nlp": getattr(sys.modules.get("unstructured.nlp.tokenize"), "LONGREAD_OFFLINE", False)}))
"""


def test_a_fresh_parsing_process_needs_no_network(tmp_path):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["formats"] == {fmt: fmt for fmt in docgen.FORMATS}
    assert result["attempts"] == [], "a parser tried to reach the network"
    assert result["spacy"] is False and result["nlp"] is True
    assert not list(tmp_path.rglob("en_core_web_sm*")), "no model was downloaded"
