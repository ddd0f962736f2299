"""The model registry as admins see it (the API's /api/models and the Models page): every version with
its key metrics and its lineage, base → run → version → run → version, followed through the training
runs that made each one."""

from __future__ import annotations

from typing import Any

from app.db import session_scope
from app.services import training_runs
from app.services.models import list_versions, own_lineage, version_dict
from app.services.training_runs import RunView
from app.services.users import UserView
from app.settings import Settings


def registry(settings: Settings, user: UserView | None = None) -> list[dict[str, Any]]:
    """`version_dict` of every version, oldest first, plus `run_id` (the run promoted to it, or None)
    and `lineage` (names from the base model to the version, oldest first)."""
    with session_scope(settings.resolved_database_url) as s:
        versions = [version_dict(v) for v in list_versions(s, user)]
    made_by = {r.version_id: r for r in training_runs.list_runs(settings, user=user) if r.version_id is not None}
    by_name = {v["name"]: v for v in versions}
    chains = {v["id"]: lineage(v, made_by, by_name) for v in versions}  # before any version's lineage changes
    for v in versions:
        run = made_by.get(v["id"])
        v["run_id"] = run.id if run else None
        v["lineage"] = chains[v["id"]]
    return versions


def lineage(version: dict[str, Any], made_by: dict[int, RunView], by_name: dict[str, dict[str, Any]]) -> list[str]:
    """From the base to `version`: each run's start version, the run, the version it was promoted to.
    A version no run made starts from what its row records (`own_lineage`: its base model, and the bundled
    reader's config)."""
    chain, seen = [version["name"]], {version["id"]}
    while (run := made_by.get(version["id"])) is not None:
        chain.insert(0, f"run #{run.id} {run.name}")
        start = by_name.get(run.start_version)
        if start is None or start["id"] in seen:  # no version: its base model (and adapter), as the run says
            chain.insert(0, run.start_version)
            return chain
        version = start
        seen.add(version["id"])
        chain.insert(0, version["name"])
    return own_lineage(version)[:-1] + chain
