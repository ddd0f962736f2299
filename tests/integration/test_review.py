"""Contract review of a real CUAD contract (2 PDF pages): through the API with the real bundled model, all 41
questions read in one pass; and `longread review` in this process with a scripted engine (its table, CSV,
Markdown and filter)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from fastapi.testclient import TestClient

from app import cli
from app.cli.common import migrate_db
from app.services import runner
from app.services.runner import run_readings
from app.settings import Settings
from app.web import create_app
from inference.contract_review import REVIEW_QUESTIONS
from inference.models import READER
from tests.conftest import MODEL_CACHE
from tests.fakes import FakeEngine, activate_version_named
from training.tasks import CONTRACTS_DIR

pytestmark = pytest.mark.integration

CONTRACT = CONTRACTS_DIR / "pdf" / "cuad-003.pdf"  # a mutual termination agreement, 2 pages, ~550 tokens


@pytest.fixture
def real_settings(tmp_path) -> Settings:
    """The app as installed: its bundled versions seeded, the default reader (it keeps sentences) active, so 41
    questions cost 41 answers, not 82 memories written (the rewriting reader reads several questions in lockstep
    in tests/integration/test_vllm_engine.py)."""
    s = Settings(
        data_dir=tmp_path / "data",
        model_cache_dir=MODEL_CACHE,
        engine="transformers",
        chunk_tokens=384,
        memory_tokens=32,
        answer_tokens=16,
    )
    migrate_db(s)
    return s


def _upload(client: TestClient) -> dict:
    r = client.post("/api/documents", files={"file": (CONTRACT.name, CONTRACT.read_bytes(), "application/pdf")})
    assert r.status_code == 201, r.text
    assert r.json()["status"] == "ready" and r.json()["pages"] == 2
    return r.json()


@pytest.mark.model
def test_api_review_reads_all_41_questions_in_one_pass_with_the_real_model(real_settings):
    with TestClient(create_app(real_settings)) as client:
        doc = _upload(client)
        r = client.post(f"/api/documents/{doc['id']}/review", json={})
        assert r.status_code == 201, r.text
        started = r.json()
        assert [row["category"] for row in started["rows"]] == [c for c, _, _ in REVIEW_QUESTIONS]
        assert {row["status"] for row in started["rows"]} == {"queued"} and not started["done"]

        ids = [row["reading_id"] for row in started["rows"]]
        run_readings(real_settings, ids)  # what the worker runs; the real in-process engine

        review = client.get(f"/api/reviews/{started['id']}").json()
        assert review["done"] and {row["status"] for row in review["rows"]} == {"done"}
        steps = {len(client.get(f"/api/readings/{i}/checkpoints").json()["checkpoints"]) for i in ids}
        assert len(steps) == 1 and steps.pop() >= 2  # every question read every chunk, in lockstep
        text = client.get(f"/api/readings/{ids[0]}/checkpoints?with_chunks=true").json()["checkpoints"]
        document = "".join(c["chunk"] for c in text)
        for row in review["rows"]:
            assert row["answer"] is not None
            if row["step"] is not None:  # its evidence: a passage of the contract, on one of its 2 pages
                assert 1 <= row["first_page"] <= row["last_page"] <= 2
                assert document[row["passage_start"] : row["passage_end"]] == row["passage"]
            if row["kind"] == "yes-no" and not row["answer"].lower().startswith("yes"):
                assert row["step"] is None
        assert client.get(f"/api/documents/{doc['id']}/reviews").json() == [started["id"]]

        exported = client.get(f"/api/reviews/{started['id']}/export?format=csv")
        assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
        assert 'filename="review-' in exported.headers["content-disposition"]
        table = list(csv.reader(io.StringIO(exported.text)))
        assert table[0][:3] == ["Category", "Kind", "Answer"] and len(table) == 1 + 41
        assert [line[2] for line in table[1:]] == [" ".join(row["answer"].split()) for row in review["rows"]]
        md = client.get(f"/api/reviews/{started['id']}/export?format=markdown").text
        assert md.startswith("# Contract review #") and md.count("\n| ") == 1 + 41
        assert client.get(f"/api/reviews/{started['id']}?which=Maybe").status_code == 422
        assert client.get("/api/reviews/999999").status_code == 404


def respond(prompt: str) -> str:
    """A reader that notes the parties from the first chunk and answers No to every clause question."""
    if "<section>" in prompt:
        return "The agreement is between Beijing SINA and SINA Leju."
    return "\\boxed{No}" if "Answer yes or no" in prompt else "\\boxed{Beijing SINA and SINA Leju}"


@pytest.fixture
def run(settings, tokenizer, monkeypatch, capsys):
    engine = FakeEngine(tokenizer, respond)
    monkeypatch.setattr(cli, "get_settings", lambda: settings)
    monkeypatch.setattr(runner, "engine_for", lambda _settings: engine)
    migrate_db(settings)  # what every command does first: the bundled versions seeded
    activate_version_named(settings, READER)  # the scripted engine writes the memories

    def run_cli(*argv: str) -> tuple[int, str, str]:
        code = cli.main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run_cli


def test_cli_review_prints_the_table_csv_markdown_and_json(run, settings):
    code, out, _ = run("ingest", str(CONTRACT))
    doc_id = out.strip()
    code, out, err = run("review", doc_id, "--chunk-tokens", "256")
    assert code == 0 and "41 questions read in one pass" in err
    lines = out.splitlines()
    assert len(lines) == 41 and lines[1].split() == ["Parties", "Beijing", "SINA", "and", "SINA", "Leju", "[page", "1]"]
    assert all(line.split()[-1] == "No" for line in lines[8:])

    code, out, _ = run("review", doc_id, "--csv", "--chunk-tokens", "256")
    table = list(csv.reader(io.StringIO(out)))
    assert len(table) == 42 and table[2][:4] == ["Parties", "extract", "Beijing SINA and SINA Leju", "page 1"]
    assert "Beijing SINA" in table[2][4] and "/pages/1.png?start=" in table[2][5]

    code, out, _ = run("review", doc_id, "--markdown", "--only", "Yes", "--chunk-tokens", "256")
    assert out.splitlines()[2].startswith("| Category |") and len(out.splitlines()) == 4  # no row says Yes

    code, out, _ = run("review", doc_id, "--json", "--only", "Found", "--chunk-tokens", "256")
    got = json.loads(out)  # every value question was answered with the parties, which the memory holds
    assert got["done"] and [r["category"] for r in got["rows"]] == [c for c, k, _ in REVIEW_QUESTIONS if k == "extract"]

    code, out, _ = run("readings", doc_id)
    assert out.count("Q: ") == 4 * 41  # every review is kept with the document


def test_the_panel_redraws_a_review_only_when_it_changed(run, settings):
    import gradio as gr

    from app.cli.common import local_admin
    from app.services import review
    from app.ui.review_panel import build_review_panel

    _, out, _ = run("ingest", str(CONTRACT))
    me = local_admin(settings)
    started = review.review(settings, int(out.strip()), 256, enqueue=False, user=me)
    with gr.Blocks():
        panel = build_review_panel(settings, lambda: me)
    *queued, seen = panel.render(started.id, "All")
    assert "reading all 41 questions" in queued[0] and seen[:2] == [started.id, "All"]
    # nothing changed: no output is touched (the table, the files, an opened row's passage)
    assert all(x == gr.update() for x in panel.on_tick(started.id, "All", seen))
    run_readings(settings, [r.reading_id for r in started.rows])
    status, table, *_, passage, note, page, now = panel.on_tick(started.id, "All", seen)
    assert "41 of 41 answered" in status and table[1][1] == "Beijing SINA and SINA Leju"
    assert (passage, note, page) == (gr.update(),) * 3 and now != seen  # the opened row stays open
    assert all(x == gr.update() for x in panel.on_tick(started.id, "All", now))
    assert all(x == gr.update() for x in panel.on_tick(None, "All", None))


def test_a_passage_of_a_reading_that_is_gone_empties_the_view_in_both_panels(settings):
    from types import SimpleNamespace

    import gradio as gr

    from app.cli.common import local_admin
    from app.ui.passages import no_passage
    from app.ui.reading_details import build_reading_details
    from app.ui.review_panel import build_review_panel

    me = local_admin(settings)
    with gr.Blocks():
        details = build_reading_details(settings, lambda: me)
    chosen = SimpleNamespace(index=[0, 1])  # a table's select event: row 0
    assert details.on_source(chosen, 999999, [[0, 5, 1, 1, 1, None]]) == no_passage()  # raised NotFound before
    with gr.Blocks():
        panel = build_review_panel(settings, lambda: me)
    assert panel.on_row(chosen, [[999999, 0, 5, 1, 1, 1]]) == no_passage()


def test_cli_review_refuses_a_bad_document_id(run):
    with pytest.raises(SystemExit, match="not a document id"):
        run("review", "abc")
    with pytest.raises(SystemExit, match="no document 999"):
        run("review", "999")
