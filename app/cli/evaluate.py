"""`longread eval`: score a model on the held-out suites or on a user's cases."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from app.settings import Settings
from app.supervisor import die_with_supervisor


def _eval_settings(settings: Settings, args: argparse.Namespace) -> tuple[Settings, str]:
    """Settings for the model under evaluation, and a label naming it."""
    updates: dict = {}
    if args.engine:
        updates["engine"] = args.engine
    if args.model:
        updates["model"] = args.model
    if args.openai_url:
        if args.adapter:
            raise SystemExit("longread eval: --adapter merges into a local model; a served model (--openai-url) "
                             "must be served with its adapter")
        updates.update(engine="openai", openai_base_url=args.openai_url)
    if args.openai_model:
        updates["openai_model"] = args.openai_model
    model = updates.get("model", settings.model)
    label = f"served {args.openai_model or ''} at {args.openai_url}".replace("  ", " ") if args.openai_url else model
    if args.adapter:
        from inference.adapters import merged_model
        from inference.models import base_of, resolve_model_path

        model = base_of(model)
        base = resolve_model_path(model, settings.model_cache_dir)
        updates["model"] = str(merged_model(base, Path(args.adapter), settings.model_cache_dir / "merged"))
        label = f"{model} + {args.adapter}"
    return Settings(**{**settings.model_dump(), **updates}), label


def cmd_eval(settings: Settings, args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from app.services.llm import engine_for
    from inference.agent import AgentConfig, MemoryAgent
    from training import evaluate as ev
    from training.tasks import KINDS, case_documents, cases_tasks, with_doc_tokens

    die_with_supervisor()  # started by a training worker to evaluate a run: stop when it dies
    settings, label = _eval_settings(settings, args)
    config = AgentConfig(
        chunk_tokens=args.chunk_tokens or settings.chunk_tokens,
        memory_tokens=args.memory_tokens or settings.memory_tokens,
        answer_tokens=args.answer_tokens or settings.answer_tokens,
        template_set=args.template or settings.template_set,
    )
    batch = args.batch or settings.max_batch
    if args.cases:
        tasks = cases_tasks(Path(args.cases))  # validate the file before starting an engine
        agent = MemoryAgent(engine_for(settings), config)
        tasks = with_doc_tokens(tasks, agent.engine.tokenizer)
        results = ev.evaluate(agent, tasks, "cases", lambda t: "cases", batch)
        out = ev.cases_json(results, case_documents(Path(args.cases)))
        if args.out:
            ev.write({"config": {"label": label, "agent": asdict(config), "engine": agent.engine.name,
                                 "cases": args.cases},
                      "summary": ev.summarize(results), "cases": [asdict(r) for r in results]},
                     Path(args.out))  # fmt: skip
        if args.json:
            print(json.dumps(out, ensure_ascii=False))
        else:
            for c in out["cases"]:
                print(f"{'✓' if c['correct'] else '✗'} {c['question']}\n  → {c['answer']}")
            print(f"sub-EM {out['sub_em']:.1%}, exact match {out['exact_match']:.1%} on {len(results)} cases")
        return 0
    kinds = list(KINDS) if args.kinds == "all" else [k.strip() for k in args.kinds.split(",") if k.strip()]
    categories = [c.strip() for c in args.categories.split(",") if c.strip()] if args.categories else None
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    agent = MemoryAgent(engine_for(settings), config)
    out_dir = Path(args.out or f"runs/eval/{time.strftime('%Y%m%d-%H%M%S')}")
    out = ev.run(agent, out_dir, ev.parse_lengths(args.lengths), args.n, kinds, categories, suites, args.seed, batch,
                 label)  # fmt: skip
    if args.json:
        print(json.dumps({"summary": out["summary"], "timing": out["timing"], "out": str(out_dir)}))
    else:
        print((out_dir / "table.md").read_text(encoding="utf-8"))
        print(f"results, table and plot in {out_dir}/", file=sys.stderr)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """eval"""
    ev = sub.add_parser(
        "eval",
        help="score a model on held-out planted facts per length and contracts per category, or on --cases",
        description="Held-out synthetic facts (novel pg37106) per document length and held-out contracts "
        "(training/tasks: HELD_OUT_CONTRACTS) per question category: sub-EM and exact match as a "
        "Markdown table, a PNG plot and results.json in --out. With --cases FILE.jsonl (one "
        '{"document", "question", "answers"} a line) it scores that set instead.',
    )
    ev.add_argument("--cases", metavar="FILE.jsonl", help="a user's set instead of the held-out suites")
    ev.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ev.add_argument("--out", metavar="DIR", help="where results.json, table.md and plot.png go "
                    "(default runs/eval/TIMESTAMP; with --cases only when given)")
    ev.add_argument("--lengths", default="2048,8192,32768,131072,book",
                    help="document lengths in tokens (8K style allowed), 'book' for the whole held-out novel")
    ev.add_argument("--n", type=int, default=16, help="synthetic questions per length")
    ev.add_argument("--kinds", default="single-needle",
                    help="synthetic task kinds, comma-separated, or 'all' (single-needle, multi-needle, "
                    "multi-hop, variable-tracking); 'absent' asks for a fact the document does not hold (correct: "
                    "the answer says the document does not say)")
    ev.add_argument("--categories", help="contract question categories, comma-separated (default all), "
                    "e.g. 'Governing Law'")
    ev.add_argument("--suites", default="synthetic,contracts", help="synthetic, contracts, or both")
    ev.add_argument("--seed", type=int, default=0, help="synthetic task seed (same seed, same tasks)")
    ev.add_argument("--model", help="'smollm2-reader' (bundled, trained), 'smollm2' (bundled, untrained) or a "
                    "Hugging Face folder (default: settings)")
    ev.add_argument("--adapter", metavar="DIR", help="a peft LoRA folder, merged into the base once and cached")
    ev.add_argument("--engine", choices=["vllm-local", "transformers", "openai"], help="default: settings")
    ev.add_argument("--openai-url", help="evaluate a served model at this OpenAI-compatible base URL")
    ev.add_argument("--openai-model", help="model name on that server (default: its only model)")
    ev.add_argument("--template", help="template set (default: settings)")
    ev.add_argument("--chunk-tokens", type=int)
    ev.add_argument("--memory-tokens", type=int)
    ev.add_argument("--answer-tokens", type=int)
    ev.add_argument("--batch", type=int, help="questions read together (default: settings' max_batch)")
    ev.set_defaults(func=cmd_eval)
