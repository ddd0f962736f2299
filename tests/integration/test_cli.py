"""`longread ask --json` in a subprocess, with the real model: stdout is exactly one JSON object."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import MODEL_CACHE

pytestmark = [pytest.mark.integration, pytest.mark.model]

DOC = (
    "Ledger of the Northern Cape Light, winter season. The supply boat arrived late in November. "
    "The spare key to the lamp room hangs behind the barometer. Storms closed the harbour twice. "
) * 4
DOC = DOC.strip()  # parsing drops trailing whitespace; the checkpoints tile the stored text


def test_ask_json_prints_one_object_with_every_checkpoint(tmp_path):
    doc = tmp_path / "ledger.txt"
    doc.write_text(DOC)
    env = {
        **os.environ,
        "LONGREAD_DATA_DIR": str(tmp_path / "data"),
        "LONGREAD_MODEL_CACHE_DIR": str(MODEL_CACHE),
        "LONGREAD_ANSWER_TOKENS": "24",
        "LONGREAD_ENGINE": "transformers",
    }  # no vLLM start per `ask`
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "ask",
            str(doc),
            "-q",
            "Where is the spare key?",
            "-q",
            "When did the boat come?",
            "--chunk-tokens",
            "40",
            "--memory-tokens",
            "24",
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    result = json.loads(out.stdout)  # fails if anything else was printed on stdout
    assert [r["question"] for r in result["readings"]] == ["Where is the spare key?", "When did the boat come?"]
    for r in result["readings"]:
        assert r["status"] == "done" and r["answer"]
        steps = r["checkpoints"]
        assert [c["step"] for c in steps] == list(range(1, len(steps) + 1)) and len(steps) >= 3
        assert steps[0]["start_char"] == 0 and steps[-1]["end_char"] == len(DOC)
        assert all(a["end_char"] == b["start_char"] for a, b in zip(steps, steps[1:]))
        assert set(steps[0]) == {"step", "memory", "start_char", "end_char", "origin", "first_page", "last_page"}
        assert isinstance(r["id"], int) and {c["origin"] for c in steps} == {"agent"}

    # the readings were stored: the same document can be asked again by id
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "ask",
            "1",
            "-q",
            "Who kept the ledger?",
            "--chunk-tokens",
            "400",
            "--memory-tokens",
            "16",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    assert "Q: Who kept the ledger?" in again.stdout and "(done, 1 chunks)" in again.stdout
