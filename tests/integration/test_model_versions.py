"""Model versions: one active at a time, new readings record it and are read with its weights (a LoRA
merged into the real SmolLM2), readings keep the version they began with, `longread models --json`."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import select

from app.db import session_scope
from app.migrate import upgrade
from app.models import ModelVersion, ReadingStatus
from app.services import models as mv
from app.services.bundled_versions import EXTRACTIVE_MEMORY_TOKENS
from app.services.documents import ingest
from app.services.errors import NotFound
from app.services.readings import create_readings, get_reading
from app.services.runner import run_readings
from app.settings import Settings
from tests.conftest import LIGHTHOUSE

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request, tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'v.db'}" if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    upgrade(url)
    return url


def _active_ids(url: str) -> list[int]:
    with session_scope(url) as s:
        return list(s.scalars(select(ModelVersion.id).where(ModelVersion.active.is_(True))))


def test_activate_switches_exactly_one(db_url):
    tag = uuid.uuid4().hex[:8]  # the PostgreSQL database is shared by the session's tests
    with session_scope(db_url) as s:
        ids = [mv.register_version(s, f"v{i}-{tag}", "smollm2", template_set="memagent").id for i in range(3)]
    assert _active_ids(db_url) == []
    for chosen in (ids[1], ids[2], ids[0]):
        with session_scope(db_url) as s:
            assert mv.activate_version(s, chosen).id == chosen
            assert mv.active_version(s).id == chosen
        assert _active_ids(db_url) == [chosen]
    with session_scope(db_url) as s:
        newest = mv.register_version(s, f"new-{tag}", "smollm2", template_set="chunk-first", activate=True)
        assert mv.active_version(s) is newest
    assert _active_ids(db_url) == [newest.id]
    with session_scope(db_url) as s:
        assert mv.activate_version(s, 0) is None  # back to the untrained base
        assert mv.active_version(s) is None
    assert _active_ids(db_url) == []
    with pytest.raises(NotFound), session_scope(db_url) as s:
        mv.activate_version(s, max(ids) + 1000)


def test_register_refuses_what_cannot_be_served(tmp_path, db_url):
    tag = uuid.uuid4().hex[:8]
    with session_scope(db_url) as s:
        with pytest.raises(mv.ModelVersionError, match="not a peft LoRA adapter"):
            mv.register_version(s, f"a-{tag}", "smollm2", adapter_path=tmp_path, template_set="memagent")
        with pytest.raises(mv.ModelVersionError, match="unknown template set"):
            mv.register_version(s, f"b-{tag}", "smollm2", template_set="nope")
        mv.register_version(s, f"c-{tag}", "smollm2", template_set="memagent")
        with pytest.raises(mv.ModelVersionError, match="exists already"):
            mv.register_version(s, f"c-{tag}", "smollm2", template_set="memagent")


@pytest.mark.model
def test_new_readings_use_the_active_version_and_keep_it(tmp_path, model_path):
    """A reading asked while a LoRA version is active records it and is read with the adapter's weights
    (served merged), even after the base is made active again; readings of the base read with the base."""
    torch = pytest.importorskip("torch")
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from app.services import llm
    from inference.agent import AgentConfig, MemoryAgent
    from inference.engines.transformers_engine import TransformersEngine
    from inference.vllm_server import cpu_dtype

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    lora = peft.get_peft_model(  # random A and B: a nonzero update that changes the greedy output
        AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32),
        peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
    )
    lora.save_pretrained(tmp_path / "adapter")
    lora.eval()
    settings = Settings(
        data_dir=tmp_path / "data",
        model_cache_dir=tmp_path / "cache",
        engine="transformers",
        model=str(model_path),
        chunk_tokens=64,
        memory_tokens=24,
        answer_tokens=12,
        template_set="memagent",
    )  # not the version's: each reading keeps its own
    url = settings.resolved_database_url
    upgrade(url)
    question = "Where does the spare key hang?"
    with session_scope(url) as s:
        doc = ingest(s, settings, "lighthouse.txt", LIGHTHOUSE.encode())
        (base_reading,) = create_readings(s, settings, doc.id, [question])
        version = mv.register_version(
            s,
            "lora-test",
            str(model_path),
            adapter_path=tmp_path / "adapter",
            template_set="chunk-first",
            chunk_tokens=48,
            memory_tokens=20,
            activate=True,
        )
        (lora_reading,) = create_readings(s, settings, doc.id, [question])
        mv.activate_version(s, 0)  # switched back before it is read: it still reads with its version
        ids, version_id, text = [base_reading.id, lora_reading.id], version.id, doc.text
    shared = set(llm._engines)  # the session's vLLM engine, which other tests still use
    try:
        assert run_readings(settings, ids) == 2  # one pass, one batch per version
    finally:
        for key in set(llm._engines) - shared:
            llm._engines.pop(key).close()

    with session_scope(url) as s:
        base, tuned = (get_reading(s, i) for i in ids)
        assert (base.model_version_id, tuned.model_version_id) == (None, version_id)
        assert (tuned.template_set, tuned.chunk_tokens, tuned.memory_tokens) == ("chunk-first", 48, 20)
        assert (base.template_set, base.chunk_tokens, base.memory_tokens) == ("memagent", 64, 24)
        assert base.status == tuned.status == ReadingStatus.done
        got = {r.id: ([c.memory for c in r.checkpoints], r.final_output) for r in (base, tuned)}
    assert any((tmp_path / "cache" / "merged").glob("merged-*/config.json"))  # served merged, cached

    def expected(engine: TransformersEngine, r_config: AgentConfig) -> tuple[list[str], str]:
        (t,) = MemoryAgent(engine, r_config).read_batch([(question, text)])
        return [c.text for c in t.completions[:-1]], t.completions[-1].text

    # the app merges the adapter into the base in float32 and reads in the CPU's dtype (cpu_dtype), as here
    merged = copy.deepcopy(lora).merge_and_unload().to(getattr(torch, cpu_dtype()))
    with torch.no_grad():
        with_adapter = expected(
            TransformersEngine.from_model(merged, tokenizer), AgentConfig(48, 20, 12, "chunk-first")
        )
        plain = expected(TransformersEngine(model_path), AgentConfig(64, 24, 12, "memagent"))
    assert got[ids[1]] == with_adapter  # the adapter's weights, merged in memory, give the same text
    assert got[ids[0]] == plain
    with torch.no_grad():  # and the adapter matters: the same settings without it write otherwise
        assert expected(TransformersEngine(model_path), AgentConfig(48, 20, 12, "chunk-first")) != with_adapter


def _cli(env: dict, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", "models", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout


def test_models_cli_json(tmp_path):
    run = tmp_path / "run"
    (run / "adapter").mkdir(parents=True)
    (run / "adapter" / "adapter_config.json").write_text("{}")
    (run / "config.json").write_text(
        json.dumps({"model": "smollm2", "template_set": "chunk-first", "chunk_tokens": 256, "memory_tokens": 64})
    )
    summary = [
        {
            "suite": "synthetic",
            "group": "2K",
            "kind": "single-needle",
            "doc_tokens": 2048,
            "n": 4,
            "sub_em": 0.75,
            "exact_match": 0.5,
        }
    ]
    (tmp_path / "eval.json").write_text(json.dumps({"config": {}, "summary": summary, "timing": [], "cases": []}))
    env = {**os.environ, "LONGREAD_DATA_DIR": str(tmp_path / "data")}

    first = json.loads(_cli(env, "--json"))  # a fresh install: the bundled model and the reader twice, extractive reads
    assert [v["name"] for v in first["versions"]] == ["smollm2", "smollm2-reader", "smollm2-reader-extractive"]
    assert first["active"] == 3 and [v["memory_policy"] for v in first["versions"]][1:] == ["generative", "extractive"]
    assert "registered, active" in _cli(
        env, "add", "sft-1", "--adapter", str(run / "adapter"), "--metrics", str(tmp_path / "eval.json"), "--activate"
    )
    out = json.loads(_cli(env, "--json"))
    assert out["active"] == 4 and len(out["versions"]) == 4
    v = out["versions"][3]
    assert set(v) == {
        "id",
        "name",
        "base_model",
        "adapter_path",
        "engine",
        "template_set",
        "memory_policy",
        "chunk_tokens",
        "memory_tokens",
        "training_run",
        "active",
        "key_metrics",
        "metrics",
        "lineage",
        "created_at",
    }
    assert (v["name"], v["base_model"], v["adapter_path"], v["active"]) == (
        "sft-1",
        "smollm2",
        str(run / "adapter"),
        True,
    )
    assert (v["template_set"], v["chunk_tokens"], v["memory_tokens"], v["training_run"]) == (
        "chunk-first",
        256,
        64,
        str(run),
    )
    assert v["key_metrics"] == {"2K": 0.75} and v["metrics"]["summary"] == summary
    table = _cli(env)
    assert "sft-1" in table and "2K 75%" in table
    assert "the settings' model (smollm2-reader)" in _cli(env, "activate", "base")
    assert json.loads(_cli(env, "--json"))["active"] is None


@pytest.fixture(params=["sqlite", "postgres"])
def fresh_settings(request, tmp_path) -> Settings:
    """Settings on an empty database of their own (the seeded rows would be every other test's too)."""
    url = f"sqlite:///{tmp_path / 'v.db'}" if request.param == "sqlite" else request.getfixturevalue("own_postgres_url")
    return Settings(data_dir=tmp_path / "data", database_url=url)


def test_the_bundled_model_and_the_reader_are_versions_from_the_first_start(fresh_settings):
    """What every command does first (`migrate_db`) registers them, with lineage and measured metrics, the reader
    under the extractive memory active; a second start builds nothing again and leaves a choice of version alone."""
    from app.cli.common import migrate_db
    from inference.models import READER_ADAPTER

    url = fresh_settings.resolved_database_url
    migrate_db(fresh_settings)
    with session_scope(url) as s:
        base, reader, extractive = (mv.version_dict(v) for v in mv.list_versions(s))
    assert (base["name"], base["base_model"], base["adapter_path"], base["active"]) == (
        "smollm2",
        "smollm2",
        None,
        False,
    )
    assert (reader["name"], reader["base_model"], reader["adapter_path"], reader["active"]) == (
        "smollm2-reader",
        "smollm2",
        str(READER_ADAPTER),
        False,
    )
    assert (extractive["name"], extractive["adapter_path"], extractive["memory_policy"], extractive["active"]) == (
        "smollm2-reader-extractive",
        str(READER_ADAPTER),
        "extractive",
        True,
    )
    config = "training/configs/small-sft-extractive-answers7.toml"  # the run the card names, by its adapter's sha256
    sha256 = hashlib.sha256((Path(__file__).resolve().parents[2] / config).read_bytes()).hexdigest()
    assert reader["lineage"] == ["smollm2", f"{config} (sha256:{sha256})", "smollm2-reader"]
    assert base["lineage"] == ["smollm2"]
    card = (READER_ADAPTER / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert f"`{reader['metrics']['lineage']['adapter_sha256']}`" in card
    assert {k: round(x, 3) for k, x in reader["key_metrics"].items() if k in ("2K", "8K", "32K", "Governing Law")} == {
        "2K": 0.562,
        "8K": 1.0,
        "32K": 0.625,
        "Governing Law": 0.125,
    }  # the card's "Measured" table
    assert base["key_metrics"]["2K"] == 0.4062 and base["key_metrics"]["Governing Law"] == 0.1
    # the reader reads with the settings' sizes, as the settings' model did before it was registered; the extractive
    # reader keeps a larger memory, which costs no writing
    assert (reader["chunk_tokens"], reader["memory_tokens"], reader["template_set"]) == (None, None, "chunk-first")
    assert (extractive["chunk_tokens"], extractive["memory_tokens"]) == (None, EXTRACTIVE_MEMORY_TOKENS) == (None, 256)
    # An install seeded before the extractive reader had its own size, or before the shipped adapter or scorer
    # changed, gets the size and the figures and lineage of what it now reads with on its next start.
    assert extractive["key_metrics"]["Governing Law"] == 0.75 and extractive["key_metrics"]["32K"] == 1.0
    with session_scope(url) as s:
        row = s.get(ModelVersion, extractive["id"])
        row.memory_tokens, row.metrics = None, {**row.metrics, "summary": [], "evals": "eval-extractive2-"}
        old = s.get(ModelVersion, reader["id"])
        old.metrics = {"summary": [], "lineage": {**old.metrics["lineage"], "adapter_sha256": "0" * 64}}
    migrate_db(fresh_settings)
    with session_scope(url) as s:
        again = mv.version_dict(s.get(ModelVersion, extractive["id"]))
        reader_again = mv.version_dict(s.get(ModelVersion, reader["id"]))
    assert again["memory_tokens"] == 256 and again["key_metrics"] == extractive["key_metrics"]
    assert reader_again["key_metrics"] == reader["key_metrics"] and reader_again["metrics"] == reader["metrics"]

    with session_scope(url) as s:
        mv.activate_version(s, base["id"])
    migrate_db(fresh_settings)
    with session_scope(url) as s:
        assert [(v.name, v.active) for v in mv.list_versions(s)] == [
            ("smollm2", True),
            ("smollm2-reader", False),
            ("smollm2-reader-extractive", False),
        ]
