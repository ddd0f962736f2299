"""The training and model-version API (app/api/training.py) on the real app: an admin lists the data,
previews, estimates, starts, watches, cancels, resumes, promotes and activates; a bad request answers
422 with what to change; a reader gets 403 on every route (production mode, real PostgreSQL). No
worker: a run stays queued here (tests/integration/test_training_runs.py trains for real)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.db import session_scope
from app.models import RunStatus, TrainingRun
from app.web import create_app
from inference.models import READER_ADAPTER
from tests.authutil import bearer, new_user, production_settings, token

pytestmark = pytest.mark.integration

#: as small as the trainer goes (tests/integration/test_training_runs.py TINY); its reading sizes are the active
#: version's (the settings')
TINY = {"sft_steps": 2, "rl_steps": 1, "samples_per_step": 1, "group_size": 2, "save_every": 1}
SYNTHETIC = {"lengths": [256]}


@pytest.fixture
def client(settings):
    with TestClient(create_app(settings)) as c:  # embedded mode: the local admin
        yield c


def test_an_admin_starts_watches_cancels_resumes_and_promotes_a_run(client, settings):
    data = client.get("/api/training/data").json()
    assert data["feedback"] == [] and data["qa_files"] == []
    assert "single-needle" in [k["kind"] for k in data["synthetic_kinds"]]
    assert "GRPO" in data["field_help"]["rl_steps"] and set(data["field_help"]) >= {"sft_steps", "group_size"}

    estimate = client.post("/api/training/estimate", json={"selection": SYNTHETIC, "params": TINY}).json()
    assert estimate["seconds"] > 0 and "built-in" in estimate["basis"]
    # An SFT step trains a few conversations of each document, however long: its time does not grow
    # with the document. An RL step reads every chunk of every rollout: past its least (a tiny step's
    # overhead), its time grows in proportion to the document's tokens.
    sft, rl = {**TINY, "rl_steps": 0}, {**TINY, "sft_steps": 0, "samples_per_step": 4, "group_size": 8}
    seconds = {
        (p["sft_steps"], n): client.post(
            "/api/training/estimate", json={"selection": {"lengths": [n]}, "params": p}
        ).json()["seconds"]
        for p in (sft, rl)
        for n in (1024, 2048, 4096)
    }
    assert seconds[2, 1024] == seconds[2, 4096]
    rl_growth = seconds[0, 4096] - seconds[0, 2048], seconds[0, 2048] - seconds[0, 1024]
    assert rl_growth[1] > 0 and rl_growth[0] == pytest.approx(2 * rl_growth[1], rel=0.01), seconds
    samples = client.post("/api/training/preview?n=2", json=SYNTHETIC).json()
    assert len(samples) == 2 and {s["source"] for s in samples} == {"synthetic"}
    assert all(s["question"] and s["answers"] and s["doc_tokens"] >= 200 for s in samples), samples

    r = client.post("/api/training/runs", json={"selection": SYNTHETIC, "params": TINY, "name": "tiny <b>run</b>"})
    assert r.status_code == 201, r.text
    run = r.json()
    assert (run["name"], run["status"], run["queue_position"], run["total_steps"]) == (
        "tiny <b>run</b>",
        "queued",
        1,
        3,
    )
    assert run["config"]["chunk_tokens"] == settings.chunk_tokens and run["selection"]["lengths"] == [256]
    assert [x["id"] for x in client.get("/api/training/runs").json()] == [run["id"]]
    detail = client.get(f"/api/training/runs/{run['id']}").json()
    assert detail["run"]["id"] == run["id"] and detail["metrics"] == [] and detail["samples"] == []
    assert client.get("/api/training/runs/999").status_code == 404

    assert client.post(f"/api/training/runs/{run['id']}/cancel").json()["status"] == "cancelled"
    refused = client.post(f"/api/training/runs/{run['id']}/cancel")
    assert refused.status_code == 422 and "only a queued or running run" in refused.json()["detail"]
    assert client.post(f"/api/training/runs/{run['id']}/resume").json()["status"] == "queued"
    for action in ("evaluate", "promote"):
        refused = client.post(f"/api/training/runs/{run['id']}/{action}")
        assert refused.status_code == 422 and "only a finished run" in refused.json()["detail"], refused.text

    # Finished (as a training worker leaves it): promoting registers its adapter as the active version.
    adapter = Path(run["run_dir"]) / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
    with session_scope(settings.resolved_database_url) as s:
        s.get(TrainingRun, run["id"]).status = RunStatus.done
    version = client.post(f"/api/training/runs/{run['id']}/promote").json()
    assert version["active"] and version["run_id"] == run["id"] and version["adapter_path"] == str(adapter)
    # no version was active: the run started from the settings' model, the bundled reader (its adapter)
    start = f"smollm2 + adapter {READER_ADAPTER}"
    assert run["start_version"] == start
    assert version["lineage"] == [start, f"run #{run['id']} tiny <b>run</b>", version["name"]]
    assert client.get(f"/api/training/runs/{run['id']}").json()["run"]["version_id"] == version["id"]

    # Switch back to the base model, and to the version again.
    assert client.post("/api/models/0/activate").json() is None
    assert [v["active"] for v in client.get("/api/models").json()] == [False]
    assert client.post(f"/api/models/{version['id']}/activate").json()["active"] is True
    assert client.post("/api/models/999/activate").status_code == 404


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"params": {**TINY, "group_size": 1}}, "group_size"),
        ({"params": {**TINY, "sft_steps": 0, "rl_steps": 0}}, "sft_steps and rl_steps are both 0"),
        ({"params": {**TINY, "extra": {"bogus": 1}}}, "bogus"),
        ({"selection": {"lengths": []}, "params": TINY}, "lengths: give at least one"),
        ({"selection": {"lengths": [10]}, "params": TINY}, "lengths: 10 is not a document length"),
        ({"selection": {"synthetic_kinds": ["needle"], "lengths": [256]}, "params": TINY}, "synthetic_kinds: unknown"),
        ({"selection": SYNTHETIC, "params": TINY, "name": "x" * 201}, "string_too_long"),
        ({"selection": SYNTHETIC, "params": {**TINY, "rl_steps": "many"}}, "int_parsing"),
    ],
)
def test_a_bad_run_answers_422_saying_what_to_change(client, body, says):
    r = client.post("/api/training/runs", json={"selection": SYNTHETIC, **body})
    assert r.status_code == 422 and says in r.text, r.text
    assert client.get("/api/training/runs").json() == []


def test_a_reader_gets_403_on_every_training_and_models_route(postgres_url, tmp_path):
    prod = production_settings(postgres_url, tmp_path / "data")
    app = create_app(prod)
    routes = {
        (method, path)
        for path, ops in app.openapi()["paths"].items()
        for method in ops
        if path.startswith(("/api/training", "/api/models"))
    }
    assert len(routes) == 12, routes  # every route of app/api/training.py, so that none is left out below
    with TestClient(app) as client:
        reader, admin = new_user(prod), new_user(prod, "admin", "ada")
        as_reader, as_admin = bearer(token(client, reader.username)), bearer(token(client, admin.username))
        for method, path in sorted(routes):
            url = path.replace("{run_id}", "1").replace("{version_id}", "1")
            body = {"json": {"selection": {"lengths": []}}} if method == "post" else {}  # invalid: 403 comes first
            r = client.request(method.upper(), url, headers=as_reader, **body)
            assert r.status_code == 403 and r.json() == {"detail": "only an admin may do this"}, (method, url, r.text)
            assert client.request(method.upper(), url, **body).status_code == 401, (method, url)
        assert client.get("/api/training/runs", headers=as_admin).status_code == 200
        assert client.get("/api/models", headers=as_admin).status_code == 200
