"""`longread models`: list model versions, register a trained adapter, activate one."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from app.cli.common import local_admin, migrate_db
from app.settings import Settings


def _models_table(settings: Settings, versions: list[dict]) -> str:
    from app.services.models import key_metrics

    rows = [("id", "name", "base", "adapter", "memory", "active", "key metrics (sub-EM)")]
    rows.append(
        (
            "0",
            "base",
            settings.model,
            "-",
            "generative",
            "" if any(v["active"] for v in versions) else "*",
            "the settings' model (LONGREAD_MODEL)",
        )
    )
    for v in versions:
        metrics = ", ".join(f"{k} {x:.0%}" for k, x in key_metrics(v["metrics"]).items()) or "-"
        rows.append(
            (
                str(v["id"]),
                v["name"],
                v["base_model"],
                v["adapter_path"] or "-",
                v["memory_policy"],
                "*" if v["active"] else "",
                metrics,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows)


def cmd_models(settings: Settings, args: argparse.Namespace) -> int:
    """List model versions, register one (`add`), or choose the one new readings use (`activate`)."""
    from app.db import session_scope
    from app.services import models as mv
    from app.services.errors import NotFound

    migrate_db(settings)
    me = local_admin(settings)
    try:
        with session_scope(settings.resolved_database_url) as s:
            if args.models_command == "add":
                v = mv.register_version(
                    s, args.name, activate=args.activate, user=me, **_version_fields(settings, args)
                )
                print(
                    f"model version {v.id} {v.name!r} registered"
                    + (
                        ", active"
                        if args.activate
                        else f"; `longread models activate {v.id}` makes new readings use it"
                    )
                )
                return 0
            if args.models_command == "activate":
                target = 0 if args.id == "base" else int(args.id) if args.id.isdigit() else -1
                if target < 0:
                    raise mv.ModelVersionError(f"{args.id!r} is not a version id (or 0 / base)")
                v = mv.activate_version(s, target, me)
                print(
                    f"new readings use model version {v.id} {v.name!r}"
                    if v
                    else f"new readings use the settings' model ({settings.model})"
                )
                return 0
            versions = [mv.version_dict(v) for v in mv.list_versions(s, me)]
    except (mv.ModelVersionError, NotFound) as exc:
        raise SystemExit(f"longread models: {exc}") from None
    if args.json:
        active = next((v["id"] for v in versions if v["active"]), None)
        print(json.dumps({"active": active, "base_model": settings.model, "versions": versions}, ensure_ascii=False))
    else:
        print(_models_table(settings, versions))
    return 0


def _version_fields(settings: Settings, args: argparse.Namespace) -> dict:
    """What `models add` registers: its flags, else what the adapter's training run says, else settings."""
    from app.services import models as mv

    run = mv.run_defaults(args.adapter) if args.adapter else {}
    metrics = None
    if args.metrics:
        try:
            metrics = mv.eval_metrics(json.loads(Path(args.metrics).read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise mv.ModelVersionError(f"--metrics {args.metrics}: {exc}") from None
    return dict(
        base_model=args.base or run.get("base_model") or settings.model,
        adapter_path=args.adapter,
        metrics=metrics,
        template_set=args.template or run.get("template_set") or settings.template_set,
        engine=args.engine,
        memory_policy=args.memory_policy,
        chunk_tokens=args.chunk_tokens or run.get("chunk_tokens"),
        memory_tokens=args.memory_tokens or run.get("memory_tokens"),
        training_run=args.training_run or run.get("training_run"),
    )


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """models"""
    from inference.agent import MEMORY_POLICIES

    models = sub.add_parser(
        "models",
        help="model versions: list, add a trained adapter, activate one",
        description="Without a subcommand: list model versions (* marks the one new readings use).",
    )
    models.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    models.set_defaults(func=cmd_models, models_command=None)
    models_sub = models.add_subparsers(dest="models_command")
    add = models_sub.add_parser(
        "add",
        help="register a model version (a LoRA adapter on a base model)",
        description="Defaults come from the adapter's training run (RUN_DIR/config.json "
        "beside RUN_DIR/adapter), else from the settings.",
    )
    add.add_argument("name", help="the version's name, shown in the app")
    add.add_argument("--adapter", metavar="DIR", help="a peft LoRA adapter folder (e.g. runs/RUN/adapter)")
    add.add_argument(
        "--base",
        help="base model: 'smollm2' or a Hugging Face folder; with engine openai the "
        "base's served name (default: the training run's, else settings)",
    )
    add.add_argument("--metrics", metavar="RESULTS.json", help="`longread eval` results to keep with it")
    add.add_argument("--template", help="template set it was trained on (default: the run's, else settings)")
    add.add_argument(
        "--memory-policy",
        choices=MEMORY_POLICIES,
        default="generative",
        help="generative: the model rewrites its memory (MemAgent's); extractive: the best-scored "
        "sentences are kept verbatim (for small models)",
    )
    add.add_argument("--chunk-tokens", type=int, help="chunk size it was trained for (default: the run's)")
    add.add_argument("--memory-tokens", type=int, help="memory size it was trained for (default: the run's)")
    add.add_argument("--engine", choices=["vllm-local", "transformers", "openai"], help="default: settings")
    add.add_argument("--training-run", metavar="RUN_DIR", help="default: the adapter's parent when it is a run")
    add.add_argument("--activate", action="store_true", help="new readings use it from now on")
    activate = models_sub.add_parser(
        "activate", help="new readings use this version (0 or 'base': the settings' model, LONGREAD_MODEL)"
    )
    activate.add_argument("id", metavar="ID", help="a model version id (`longread models` lists them), or 0 / base")
