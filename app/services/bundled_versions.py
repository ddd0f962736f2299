"""The bundled base model and the shipped reader as model versions from the first start (`longread serve`,
`worker`, `migrate` and every other command bring the database up to date, then call `seed_bundled`).

Each row is built only when missing (by name), from files git keeps: the reader's model card names its
adapter's sha256, the results index (training/results.jsonl) names the run that made it, its config and the
evaluations that measured it. The reader's rows are brought up to date when the shipped adapter or its evaluations
change. Nothing is hashed but the small config file.
Their chunk and memory sizes are None (the settings'), so LONGREAD_CHUNK_TOKENS and LONGREAD_MEMORY_TOKENS
read as they did before these rows existed; the reader was trained at the settings' defaults (1024/128)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.models import ModelVersion
from app.services.models import activate_version, active_version, register_version
from app.settings import Settings
from inference.models import BUNDLED, EXTRACTIVE_READER, READER, READER_ADAPTER
from training.config import TrainConfig, load_config
from training.results_index import INDEX, REPO, load_index

#: The index lines the model card's "Measured" table cites: the reader's and the untrained model's evaluations
#: (a newly shipped reader names its own here, with its card).
READER_EVALS = "eval-answers7-rewriting-"
BASE_EVALS = "eval-base1024-"
EXTRACTIVE_EVALS = "eval-extractive5-"
#: the extractive reader's memory: sentences kept verbatim cost no writing, and at 256 tokens the evidence of 84% of
#: dev contract questions reached the final memory against 79% at 128 (the probe), contracts answered 31/42
#: against 25/42 read as uploads (docs/experiments/2026-12-06-first-mention-labels.md)
EXTRACTIVE_MEMORY_TOKENS = 256
_CARD_SHA256 = re.compile(r"^\| sha256 \| `([0-9a-f]{64})`", re.MULTILINE)


def seed_bundled(session: Session, settings: Settings) -> None:
    """Add the rows for the bundled model, the reader and the extractive reader (the reader's weights, its memory
    the best-scored sentences kept verbatim) that are missing; the extractive reader becomes active when it is
    added while none is, and the settings' model is the reader (the same weights read). Rows seeded before the
    shipped adapter or scorer changed get the figures and lineage of what they now read with."""
    names = (BUNDLED, READER, EXTRACTIVE_READER)
    have = set(session.scalars(select(ModelVersion.name).where(ModelVersion.name.in_(names))))
    index = load_index(INDEX)
    run = _reader_run(index)
    config = load_config(REPO / run["config_file"])
    template_set = config.template_set  # the base too: the untrained model was measured with the same templates
    lineage = _lineage(run, config)  # the reader's weights, whichever memory reads with them
    shipped = {
        READER: _metrics(index, READER_EVALS, lineage),
        EXTRACTIVE_READER: _metrics(index, EXTRACTIVE_EVALS, lineage),
    }
    _refresh_shipped(session, shipped)
    if have >= set(names):
        return
    try:
        with session.begin_nested():  # a second process seeding at the same moment: its rows stand
            if BUNDLED not in have:
                register_version(
                    session,
                    BUNDLED,
                    BUNDLED,
                    metrics={"summary": _summary(index, BASE_EVALS), "lineage": {"base": BUNDLED}},
                    template_set=template_set,
                )
            if READER not in have:
                register_version(session, READER, BUNDLED, READER_ADAPTER, shipped[READER], template_set=template_set)
            if EXTRACTIVE_READER not in have:
                extractive = register_version(
                    session,
                    EXTRACTIVE_READER,
                    BUNDLED,
                    READER_ADAPTER,
                    shipped[EXTRACTIVE_READER],
                    template_set=template_set,
                    memory_policy="extractive",
                    memory_tokens=EXTRACTIVE_MEMORY_TOKENS,
                )
                if active_version(session) is None and settings.model == READER:
                    activate_version(session, extractive.id)
    except IntegrityError:
        pass


def _metrics(index: list[dict[str, Any]], prefix: str, lineage: dict[str, Any]) -> dict[str, Any]:
    """A shipped version's figures (the index's evaluations named `prefix*`), where they come from, its lineage."""
    return {"summary": _summary(index, prefix), "evals": prefix, "lineage": lineage}


def _refresh_shipped(session: Session, shipped: dict[str, dict[str, Any]]) -> None:
    """The reader's rows as this checkout ships them: an install seeded before the adapter (its sha256) or the
    evaluations that measure it (a new scorer's) changed keeps its rows and readings, with the figures and lineage
    of the weights it now reads with; the extractive reader seeded without a memory size (before 2026-12-06) gets
    its 256 tokens. Its readings so far keep the sizes they were read with."""
    for row in session.scalars(select(ModelVersion).where(ModelVersion.name.in_(list(shipped)))):
        now = shipped[row.name]
        seeded = row.metrics or {}
        if (seeded.get("evals"), seeded.get("lineage")) != (now["evals"], now["lineage"]):
            row.metrics = {**seeded, **now}
        if row.name == EXTRACTIVE_READER and row.memory_tokens is None:
            row.memory_tokens = EXTRACTIVE_MEMORY_TOKENS


def _reader_run(index: list[dict[str, Any]]) -> dict[str, Any]:
    """The index line of the training run that made the shipped adapter (by the sha256 its card names)."""
    sha256 = _card_sha256()
    for entry in index:
        if entry.get("kind") == "train" and any(a["sha256"] == sha256 for a in entry.get("adapters", [])):
            return entry
    raise RuntimeError(f"no training run in {INDEX} made the reader's adapter sha256:{sha256}")


def _card_sha256() -> str:
    """The sha256 of the shipped adapter, as its model card names it."""
    found = _CARD_SHA256.search((READER_ADAPTER / "MODEL_CARD.md").read_text(encoding="utf-8"))
    if found is None:
        raise RuntimeError(f"{READER_ADAPTER / 'MODEL_CARD.md'} names no sha256")
    return found.group(1)


def _lineage(run: dict[str, Any], config: TrainConfig) -> dict[str, Any]:
    """base → config (with its sha256) → reader: the run between them and the sizes it trained at."""
    return {
        "base": config.model,
        "config": run["config_file"],
        "config_sha256": hashlib.sha256((REPO / run["config_file"]).read_bytes()).hexdigest(),
        "init_adapter": config.init_adapter,
        "run": run["name"],
        "adapter_sha256": _card_sha256(),  # a run may hold several (sft-anchor2: float32, bfloat16)
        "chunk_tokens": config.chunk_tokens,
        "memory_tokens": config.memory_tokens,
    }


def _summary(index: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """`longread eval` summary rows from the index's evaluations named `prefix*`. Planted-fact sets drawn with
    other seeds are pooled; a fixed set (the held-out contracts) measured again counts once."""
    pooled: dict[str, dict[str, float]] = {}
    for entry in index:
        if entry.get("kind") != "eval" or not entry["name"].startswith(prefix):
            continue
        for key, m in entry.get("metrics", {}).items():
            if not isinstance(m, dict) or (key in pooled and not key.startswith("synthetic/")):
                continue
            row = pooled.setdefault(key, {"n": 0, "sub_em": 0.0, "exact_match": 0.0})
            for name in ("sub_em", "exact_match"):
                row[name] = (row[name] * row["n"] + m[name] * m["n"]) / (row["n"] + m["n"])
            row["n"] += m["n"]
    rows = []
    for key, m in pooled.items():
        suite, group, kind = key.split("/", 2)
        rows.append(
            {
                "suite": suite,
                "group": group,
                "kind": kind,
                "n": m["n"],
                "sub_em": round(m["sub_em"], 4),
                "exact_match": round(m["exact_match"], 4),
            }
        )
    return rows
