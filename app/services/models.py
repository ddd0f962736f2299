"""Model versions: which weights read new questions.

A version is a base model, optionally with a peft LoRA adapter trained on it, with the template set
and chunk/memory sizes it was trained for and its `longread eval` metrics. At most one is active;
new readings record it and are read with its weights. None active means the settings' model
(LONGREAD_MODEL). Readings keep the version they were created with, so a reading in flight finishes
on the weights it began with however often the active version changes.

Serving a version (`serving_settings`): an adapter is merged into its base once and cached under
MODEL_CACHE_DIR/merged (`model_folder`, inference/models.py), and that folder is the model of the `transformers`
and `vllm-local` engines. With the `openai` engine the weights live on the server: the version's
name is the served model name to request (e.g. vLLM's `--lora-modules NAME=ADAPTER_DIR` or
`--served-model-name NAME`).

Registering, listing and activating versions is for admins (`user=`: the acting user; the CLI acts as
the local admin; None: the system itself).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.db import session_scope
from app.models import ModelVersion
from app.services.errors import NotFound, valid_id
from app.services.users import UserView, require_admin
from app.settings import Settings
from inference.agent import MEMORY_POLICIES
from inference.models import BUNDLED, EXTRACTIVE_READER, READER, model_folder
from inference.templates import TEMPLATE_SETS

ENGINES = ("vllm-local", "transformers", "openai")
#: The bundled versions as a newcomer can tell them apart: what the page shows for them (the Models tab, the
#: training form, the header's model line). The database, the API and the CLI keep the stored names.
BUNDLED_LABELS = {
    BUNDLED: "SmolLM2-135M, untrained",
    READER: "Longread reader (rewrites its memory)",
    EXTRACTIVE_READER: "Longread reader (keeps sentences)",
}


def version_label(name: str) -> str:
    """How the page names a model version (or the settings' model): a bundled one by what it is, any other by
    its stored name.

    >>> version_label("smollm2-reader-extractive"), version_label("run-3: contracts")
    ('Longread reader (keeps sentences)', 'run-3: contracts')
    """
    return BUNDLED_LABELS.get(name, name)


class ModelVersionError(ValueError):
    """A version cannot be registered or activated; the message says what to change."""


def register_version(
    session: Session,
    name: str,
    base_model: str,
    adapter_path: str | Path | None = None,
    metrics: dict[str, Any] | None = None,
    *,
    template_set: str,
    memory_policy: str = "generative",
    engine: str | None = None,
    chunk_tokens: int | None = None,
    memory_tokens: int | None = None,
    training_run: str | Path | None = None,
    activate: bool = False,
    user: UserView | None = None,
) -> ModelVersion:
    """Store a new version (inactive unless `activate`). An adapter folder must hold a peft adapter."""
    require_admin(user)
    name = name.strip()
    if not name:
        raise ModelVersionError("a model version needs a name")
    if session.scalar(select(ModelVersion.id).where(ModelVersion.name == name)) is not None:
        raise ModelVersionError(f"a model version named {name!r} exists already; choose another name")
    if template_set not in TEMPLATE_SETS:
        raise ModelVersionError(f"unknown template set {template_set!r}; choose one of {', '.join(TEMPLATE_SETS)}")
    if memory_policy not in MEMORY_POLICIES:
        raise ModelVersionError(f"unknown memory policy {memory_policy!r}; choose one of {', '.join(MEMORY_POLICIES)}")
    if engine is not None and engine not in ENGINES:
        raise ModelVersionError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if adapter_path is not None:
        adapter_path = Path(adapter_path).expanduser().resolve()
        if not (adapter_path / "adapter_config.json").is_file():
            raise ModelVersionError(
                f"{adapter_path} is not a peft LoRA adapter folder (no adapter_config.json)"
                + _adapter_hint(adapter_path)
            )
    if (
        base_model not in (BUNDLED, READER) and Path(base_model).expanduser().is_dir()
    ):  # found from any working directory
        base_model = str(Path(base_model).expanduser().resolve())
    version = ModelVersion(
        name=name,
        base_model=base_model,
        adapter_path=str(adapter_path) if adapter_path else None,
        engine=engine,
        template_set=template_set,
        memory_policy=memory_policy,
        chunk_tokens=chunk_tokens,
        memory_tokens=memory_tokens,
        training_run=str(training_run) if training_run else None,
        metrics=metrics,
        active=False,
    )
    session.add(version)
    session.flush()
    if activate:
        activate_version(session, version.id)
    return version


def _adapter_hint(folder: Path) -> str:
    if (folder / "adapter" / "adapter_config.json").is_file():
        return f"; a training run's adapter is {folder / 'adapter'}"
    if any(folder.glob("*.safetensors")) and (folder / "config.json").is_file():
        return "; it holds full weights: register it as the base model (--base) instead"
    return ""


def list_versions(session: Session, user: UserView | None = None) -> list[ModelVersion]:
    """Every version, oldest first (admins)."""
    require_admin(user)
    return list(session.scalars(select(ModelVersion).order_by(ModelVersion.id)))


def activate_version(session: Session, version_id: int | None, user: UserView | None = None) -> ModelVersion | None:
    """Make `version_id` the only active version, in one statement (so in one transaction); None or 0
    deactivates all: new readings then use the settings' model (admins)."""
    require_admin(user)
    version = None
    if version_id:
        version = session.get(ModelVersion, version_id) if valid_id(version_id) else None
        if version is None:
            raise NotFound(f"no model version {version_id}")
    # One UPDATE of every row: two concurrent activations cannot leave two versions active.
    active = (ModelVersion.id == version_id) if version else False
    session.execute(update(ModelVersion).values(active=active), execution_options={"synchronize_session": False})
    for obj in list(session.identity_map.values()):
        if isinstance(obj, ModelVersion):
            session.expire(obj, ["active"])
    return version


def active_version(session: Session) -> ModelVersion | None:
    """The active version; None means the settings' model (LONGREAD_MODEL)."""
    return session.scalar(select(ModelVersion).where(ModelVersion.active.is_(True)).order_by(ModelVersion.id))


def version_engine(settings: Settings, version: ModelVersion | None) -> str:
    """The engine that serves `version`: its own, else the settings' (also for None)."""
    return (version.engine if version is not None else None) or settings.engine


def serving_settings(settings: Settings, version: ModelVersion | None) -> Settings:
    """Settings whose engine (app/services/llm.py `engine_for`) serves `version`'s weights; the
    settings themselves for None. Merging an adapter takes a while the first time (then cached)."""
    if version is None:
        return settings
    engine = version_engine(settings, version)
    updates: dict[str, Any] = {"engine": engine, "model": version.base_model}
    if engine == "openai":
        updates["openai_model"] = version.name
    elif version.adapter_path:  # merging imports torch and peft, and takes a while the first time
        updates["model"] = str(model_folder(version.base_model, version.adapter_path, settings.model_cache_dir))
    return Settings(**{**settings.model_dump(), **updates})


def active_serving_settings(settings: Settings) -> Settings:
    """`serving_settings` of the active version (a worker starts its engine before any reading)."""
    with session_scope(settings.resolved_database_url) as s:
        version = active_version(s)
    return serving_settings(settings, version)


def run_defaults(adapter_path: str | Path) -> dict[str, Any]:
    """What a training run says about the adapter it wrote (`RUN_DIR/adapter` beside `RUN_DIR/config.json`):
    base model, template set, chunk and memory sizes and the run folder; {} when there is no such run."""
    run_dir = Path(adapter_path).expanduser().resolve().parent
    try:
        config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(config, dict):
        return {}
    out: dict[str, Any] = {"training_run": str(run_dir)}
    for key, field in (
        ("model", "base_model"),
        ("template_set", "template_set"),
        ("chunk_tokens", "chunk_tokens"),
        ("memory_tokens", "memory_tokens"),
    ):
        if config.get(key) is not None:
            out[field] = config[key]
    return out


def eval_metrics(results: dict[str, Any]) -> dict[str, Any]:
    """The part of a `longread eval` results JSON worth keeping with a version: the summary rows,
    timing and config (the per-case list is left out), or the sub-EM/exact match of `--cases --json`."""
    keep = ("config", "summary", "timing", "sub_em", "exact_match")
    metrics = {k: results[k] for k in keep if k in results}
    if "cases" in results and isinstance(results["cases"], list):
        metrics["n"] = len(results["cases"])
    if not metrics:
        raise ModelVersionError("not a `longread eval` results file (no summary, no sub_em)")
    return metrics


def key_metrics(metrics: dict[str, Any] | None) -> dict[str, float]:
    """Sub-EM per set (a length or a contract category), or overall for a `--cases` result. A group of
    several kinds counts its `all` row, or else its kinds pooled by n (a clause suite's "gold Yes" holds 33).

    >>> key_metrics({"summary": [{"group": "2K", "kind": "all", "n": 4, "sub_em": 0.5},
    ...     {"group": "2K", "kind": "single-needle", "n": 2, "sub_em": 1.0},
    ...     {"group": "gold Yes", "kind": "clause:Audit Rights", "n": 1, "sub_em": 1.0},
    ...     {"group": "gold Yes", "kind": "clause:Insurance", "n": 3, "sub_em": 0.0}]})
    {'2K': 0.5, 'gold Yes': 0.25}
    """
    if not metrics:
        return {}
    if "summary" in metrics:
        rows = metrics["summary"]
        mixed = {r["group"] for r in rows if r.get("kind") == "all"}  # several kinds: their `all` row
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            if r["group"] not in mixed or r["kind"] == "all":
                groups.setdefault(str(r["group"]), []).append(r)
        return {
            group: float(rs[0]["sub_em"])
            if len(rs) == 1
            else sum(r["n"] * r["sub_em"] for r in rs) / sum(r["n"] for r in rs)
            for group, rs in groups.items()
        }
    return {"sub_em": float(metrics["sub_em"])} if "sub_em" in metrics else {}


def own_lineage(version: dict[str, Any]) -> list[str]:
    """What a version's own row says it was made from, oldest first, ending with its name: its base model
    when it has an adapter, and the config (with its sha256) that trained it when its metrics record one
    (the bundled reader's, app/services/bundled_versions.py). The registry adds the runs that made it."""
    made = (version.get("metrics") or {}).get("lineage") or {}
    chain = [version["name"]]
    if made.get("config"):
        chain.insert(0, f"{made['config']} (sha256:{made['config_sha256']})")
    if version["adapter_path"]:
        chain.insert(0, made.get("base") or version["base_model"])
    return chain


def version_dict(version: ModelVersion) -> dict[str, Any]:
    """A version as plain data (`longread models --json`), with its own lineage."""
    out = {
        "id": version.id,
        "name": version.name,
        "base_model": version.base_model,
        "adapter_path": version.adapter_path,
        "engine": version.engine,
        "template_set": version.template_set,
        "memory_policy": version.memory_policy,
        "chunk_tokens": version.chunk_tokens,
        "memory_tokens": version.memory_tokens,
        "training_run": version.training_run,
        "active": version.active,
        "key_metrics": key_metrics(version.metrics),
        "metrics": version.metrics,
        "created_at": version.created_at.isoformat(),
    }
    out["lineage"] = own_lineage(out)
    return out
