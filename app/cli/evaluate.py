"""`longread eval`: score a reader on the dev or held-out suites, or on a user's cases, read as uploads."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from app.settings import Settings
from inference.agent import MEMORY_POLICIES


def _reader(settings: Settings, args: argparse.Namespace):
    from app.services import evaluation

    try:
        return evaluation.reader(
            settings,
            model=args.model,
            adapter=args.adapter,
            engine=args.engine,
            openai_url=args.openai_url,
            openai_model=args.openai_model,
            chunk_tokens=args.chunk_tokens,
            memory_tokens=args.memory_tokens,
            answer_tokens=args.answer_tokens,
            template_set=args.template,
            memory_policy=args.memory_policy,
        )
    except evaluation.EvalError as exc:
        raise SystemExit(f"longread eval: {exc}") from None


def cmd_eval(settings: Settings, args: argparse.Namespace) -> int:
    from app.cli.common import migrate_db
    from app.services import evaluation
    from app.services.train_job import suites_json
    from training import evaluate as ev
    from training.tasks import KINDS, case_documents, case_rows

    if args.shift_tokens < 0:
        raise SystemExit("longread eval: --shift-tokens must not be negative")
    if not (args.model or args.adapter or args.openai_url):
        # the reader the app serves: the active model version, seeded as a fresh install seeds it (with the schema
        # alone, a new data folder had no versions and was read by the settings' model, not the app's default)
        migrate_db(settings)
    if args.cases:
        try:
            case_rows(Path(args.cases))  # check the file before an engine starts
        except ValueError as exc:
            raise SystemExit(f"longread eval: {exc}") from None
        try:
            out_dir = Path(args.out) if args.out else None
            results = evaluation.evaluate_cases(
                _reader(settings, args), Path(args.cases), out_dir, args.shift_tokens, args.batch
            )
        except evaluation.EvalError as exc:
            raise SystemExit(f"longread eval: {exc}") from None
        printed = ev.cases_json(results, case_documents(Path(args.cases)))
        if args.json:
            print(json.dumps(printed, ensure_ascii=False))
        else:
            for c in printed["cases"]:
                print(f"{'✓' if c['correct'] else '✗'} {c['question']}\n  → {c['answer']}")
            print(f"sub-EM {printed['sub_em']:.1%}, exact match {printed['exact_match']:.1%} on {len(results)} cases")
            print(ev.suites_table(ev.suite_summary(results)), end="")
        return 0
    kinds = list(KINDS) if args.kinds == "all" else [k.strip() for k in args.kinds.split(",") if k.strip()]
    suites = [s.strip() for s in args.suites.split(",") if s.strip()]
    categories = [c.strip() for c in args.categories.split(",") if c.strip()] if args.categories else None
    out_dir = Path(args.out or f"runs/eval/{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        lengths = ev.parse_lengths(args.lengths) if args.lengths else None
        out = evaluation.evaluate_suites(
            _reader(settings, args),
            suites,
            args.split,
            out_dir,
            args.limit,
            args.shift_tokens,
            lengths,
            args.n,
            kinds,
            args.batch,
            categories,
        )
    except (evaluation.EvalError, ValueError) as exc:
        raise SystemExit(f"longread eval: {exc}") from None
    if args.json:
        print(json.dumps({**suites_json(out), "out": str(out_dir)}))
    else:
        print((out_dir / "table.md").read_text(encoding="utf-8"))
        print(f"results, table and plot in {out_dir}/", file=sys.stderr)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """eval"""
    ev = sub.add_parser(
        "eval",
        help="score a reader on the dev or held-out suites (contracts, clauses, books, planted facts), or on --cases",
        description="Reads every document as an upload is read (the app's sandboxed parser, its chunking, the sizes, "
        "template and engine a new reading gets, all of a document's questions in one pass) and scores the answers "
        "(sub-EM, exact match), with where each miss happened: the evidence never entered the memory, was "
        "overwritten, or the final memory held it and the answer missed it. Suites and their dev / held-out split: "
        "training/suites.py; dev sets choose between readers, held-out sets are reported once per shipped reader. "
        "Writes results.json (every case and memory), table.md and plot.png in --out. With --cases FILE.jsonl "
        '(one {"document", "question", "answers"} a line; documents in any format an upload accepts) it scores '
        "that set instead.",
    )
    ev.add_argument("--cases", metavar="FILE.jsonl", help="a user's set instead of the suites")
    ev.add_argument(
        "--split",
        choices=["dev", "held-out", "held-out-v1"],  # training.suites.SPLITS, not imported at start-up
        default="dev",
        help="dev (to choose between readers; default), held-out (to report a shipped reader) or held-out-v1 "
        "(the held-out split until 2026-12-05, whose contracts include 10 that readers were trained on)",
    )
    ev.add_argument(
        "--suites",
        default="contracts,clauses,books,synthetic",
        help="comma-separated, of contracts, clauses, books, synthetic (default all)",
    )
    ev.add_argument("--limit", type=int, help="documents per suite (per length for synthetic), the first N")
    ev.add_argument(
        "--shift-tokens",
        type=int,
        default=0,
        metavar="N",
        help="move every chunk boundary N tokens later (robustness: compare with a run at 0)",
    )
    ev.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ev.add_argument(
        "--out",
        metavar="DIR",
        help="where results.json, table.md and plot.png go (default runs/eval/TIMESTAMP; with --cases only when given)",
    )
    ev.add_argument(
        "--lengths",
        help="planted-fact document lengths in tokens (8K style allowed), 'book' for a whole "
        "novel (default: 2K, 8K, 32K, 128K and book held out; 2K, 8K, 32K and book on dev)",
    )
    ev.add_argument("--n", type=int, default=16, help="planted-fact questions per length")
    ev.add_argument(
        "--kinds",
        default="single-needle",
        help="planted-fact kinds, comma-separated, or 'all' (single-needle, multi-needle, "
        "multi-hop, variable-tracking); 'absent' asks for a fact the document does not hold (correct: "
        "the answer says the document does not say)",
    )
    ev.add_argument(
        "--categories", help="contract or clause categories to ask, comma-separated (default all), e.g. 'Governing Law'"
    )
    ev.add_argument(
        "--model",
        help="'smollm2-reader' (bundled, trained), 'smollm2' (bundled, untrained) or a "
        "Hugging Face folder (default: the reader the app serves, the active model version)",
    )
    ev.add_argument("--adapter", metavar="DIR", help="a peft LoRA folder, merged into the base once and cached")
    ev.add_argument("--engine", choices=["vllm-local", "transformers", "openai"], help="default: settings")
    ev.add_argument("--openai-url", help="evaluate a served model at this OpenAI-compatible base URL")
    ev.add_argument("--openai-model", help="model name on that server (default: its only model)")
    ev.add_argument("--template", help="template set (default: what a new reading gets)")
    ev.add_argument("--chunk-tokens", type=int, help="default: what a new reading gets")
    ev.add_argument("--memory-tokens", type=int, help="default: what a new reading gets")
    ev.add_argument("--answer-tokens", type=int, help="default: settings")
    ev.add_argument("--memory-policy", choices=MEMORY_POLICIES, help="with --model or --adapter (default generative)")
    ev.add_argument(
        "--batch",
        type=int,
        help="most questions of a document read together (default: all of them, "
        "as the app reads a document's questions)",
    )
    ev.set_defaults(func=cmd_eval)
