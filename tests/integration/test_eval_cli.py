"""`longread eval --cases FILE --json` in a subprocess with the real model (in-process engine): stdout
is exactly the documented object, and `correct` is the verifier's sub-EM of the printed answer."""

import json
import os
import subprocess
import sys

import pytest

from app.db import session_scope
from app.services.models import active_version
from app.settings import Settings
from inference.models import EXTRACTIVE_READER
from tests.conftest import LIGHTHOUSE, MODEL_CACHE
from training.tasks import CONTRACTS_DIR
from training.verifier import exact_match, sub_em

pytestmark = [pytest.mark.integration, pytest.mark.model]


def test_eval_cases_json_reads_txt_md_and_pdf_and_agrees_with_the_verifier(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "lighthouse.txt").write_text(LIGHTHOUSE)
    (tmp_path / "notes.md").write_text("# Notes\n\nThe meeting is on Thursday in the blue room.\n")
    pdf = CONTRACTS_DIR / "pdf" / "cuad-003.pdf"  # a one-page contract governed by the laws of the PRC
    cases = [
        {
            "document": "docs/lighthouse.txt",
            "question": "Where does the spare key hang?",
            "answers": ["behind the barometer"],
        },
        {"document": "docs/lighthouse.txt", "question": "How many steps did Mara climb?", "answers": ["ninety", "90"]},
        {"document": "notes.md", "question": "On which day is the meeting?", "answers": ["Thursday"]},
        {
            "document": str(pdf),
            "question": "Which country's law governs this agreement?",
            "answers": ["People's Republic of China", "PRC"],
        },
    ]
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    env = {**os.environ, "LONGREAD_DATA_DIR": str(tmp_path / "data"), "LONGREAD_MODEL_CACHE_DIR": str(MODEL_CACHE)}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "app.cli",
            "eval",
            "--cases",
            str(path),
            "--json",
            "--engine",
            "transformers",
            "--chunk-tokens",
            "128",
            "--memory-tokens",
            "40",
            "--answer-tokens",
            "24",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
        cwd=tmp_path,
    )
    result = json.loads(out.stdout)  # fails if anything else was printed on stdout
    assert set(result) == {"cases", "sub_em", "exact_match"}
    assert [(c["document"], c["question"]) for c in result["cases"]] == [(c["document"], c["question"]) for c in cases]
    for printed, case in zip(result["cases"], cases):
        assert set(printed) == {"document", "question", "answer", "correct"}
        assert isinstance(printed["answer"], str) and isinstance(printed["correct"], bool)
        assert printed["correct"] == sub_em(printed["answer"], case["answers"])
    correct = [c["correct"] for c in result["cases"]]
    assert result["sub_em"] == pytest.approx(sum(correct) / len(correct))
    exact = [exact_match(p["answer"], c["answers"]) for p, c in zip(result["cases"], cases)]
    assert result["exact_match"] == pytest.approx(sum(exact) / len(exact))
    # a new data folder is read by what a fresh install serves, not by the settings' model: with the schema alone
    # it had no versions, and the rewriting reader was evaluated where the app would keep sentences
    settings = Settings(data_dir=tmp_path / "data")
    with session_scope(settings.resolved_database_url) as s:
        assert active_version(s).name == EXTRACTIVE_READER
