"""`longread eval`: the evaluation suites and a person's cases, read the way the app reads an upload.

A figure means something for users only when it is measured on their path. So every document goes through
what an upload goes through (app/services/documents.py): its bytes are parsed in the sandboxed child
(`parse_untrusted`: PDFs page by page, DOCX/EPUB/HTML/Markdown by sections, text normalised), chunked by the
serving tokenizer, and read with the sizes and template set a new reading would get (`reading_config`: the
active model version's, else the settings') on the engine that serves it (`serving_settings`: its dtype and
all); and all of a document's questions are read together in one pass, as the app reads the questions a
person asks of a document at once. `tests/integration/test_eval_path.py` holds this to the app: one case
gives the same checkpoints and answers here as uploaded and asked through the services.

Scoring, where each miss happened, the tables and results.json are training/evaluate.py's; which documents
and questions, and their dev / held-out split, training/suites.py's.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from app.db import session_scope
from app.documents.base import ParseError
from app.documents.sandbox import DEFAULT_LIMITS, parse_untrusted
from app.services.llm import engine_for
from app.services.models import active_version, serving_settings
from app.services.reading_config import reading_config
from app.settings import Settings
from inference.agent import AgentConfig, MemoryAgent
from training import evaluate as ev
from training.suites import SUITES, EvalDocument, EvalSplit, cases_documents, group_of, suite_documents
from training.tasks import count_tokens
from training.tracking import tracking_root


class EvalError(ValueError):
    """The evaluation cannot run as asked; the message says what to change."""


@dataclass(frozen=True)
class Reader:
    """What is evaluated: the engine's settings, the reading sizes and template, and a label for tables."""

    settings: Settings
    config: AgentConfig
    label: str


def reader(
    settings: Settings,
    *,
    model: str | None = None,
    adapter: str | None = None,
    engine: str | None = None,
    openai_url: str | None = None,
    openai_model: str | None = None,
    chunk_tokens: int | None = None,
    memory_tokens: int | None = None,
    answer_tokens: int | None = None,
    template_set: str | None = None,
    memory_policy: str | None = None,
) -> Reader:
    """The reader the app serves now (the active model version on its engine, with the sizes a new reading
    gets), or the model, adapter or server named instead (read with `memory_policy`, generative unless given: a
    named model carries no version's); sizes and template given here win."""
    updates: dict[str, Any] = {}
    if engine:
        updates["engine"] = engine
    if model:
        updates["model"] = model
    if openai_url:
        if adapter:
            raise EvalError(
                "--adapter merges into a local model; a served model (--openai-url) must be served with its adapter"
            )
        updates.update(engine="openai", openai_base_url=openai_url)
    if openai_model:
        updates["openai_model"] = openai_model
    version = None
    if not (model or adapter or openai_url):
        with session_scope(settings.resolved_database_url) as s:
            version = active_version(s)
            served = serving_settings(settings, version)
            label = version.name if version else settings.model
            config = reading_config(
                settings, version, chunk_tokens, memory_tokens, answer_tokens=answer_tokens, template_set=template_set
            )
    else:
        served = settings
        config = reading_config(
            settings, None, chunk_tokens, memory_tokens, answer_tokens=answer_tokens, template_set=template_set
        )
        if memory_policy:
            config = replace(config, memory_policy=memory_policy)
        chosen = updates.get("model", settings.model)
        label = f"served {openai_model or ''} at {openai_url}".replace("  ", " ") if openai_url else chosen
        if adapter:
            from inference.models import base_of, model_folder

            updates["model"] = str(model_folder(chosen, adapter, settings.model_cache_dir))
            label = f"{base_of(chosen)} + {adapter}"
    served = Settings(**{**served.model_dump(), **updates})
    return Reader(served, config, label)


def uploaded_text(document: EvalDocument) -> str:
    """The text an upload of the document's bytes would hold: parsed in the sandbox, as app/services/documents."""
    try:
        return parse_untrusted(document.data(), DEFAULT_LIMITS).text
    except ParseError as exc:
        raise EvalError(f"{document.filename}: {exc}") from None


class Progress:
    """An evaluation job's progress file: {"done", "total", "elapsed_s"}: questions read of all the job reads,
    and seconds since it started (its engine's start included), rewritten after each document as a whole (a
    temporary file renamed over it): the Training tab reads it while a run is evaluated."""

    def __init__(self, path: Path | None, total: int, started: float):
        self.path, self.total, self.done, self.started = path, total, 0, started
        self.add(0)

    def add(self, questions: int) -> None:
        self.done += questions
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        elapsed = round(time.monotonic() - self.started, 1)
        tmp.write_text(json.dumps({"done": self.done, "total": self.total, "elapsed_s": elapsed}), encoding="utf-8")
        os.replace(tmp, self.path)


def read_documents(
    agent: MemoryAgent,
    documents: Sequence[EvalDocument],
    batch: int | None = None,
    log: Callable[[str], None] | None = None,
    progress: Progress | None = None,
) -> list[ev.CaseResult]:
    """Each document as uploaded, all its questions read together (at most `batch` at once when given), then
    scored; results document by document, questions in their order."""
    results: list[ev.CaseResult] = []
    for n, doc in enumerate(documents, 1):
        text = uploaded_text(doc)
        tokens = count_tokens(agent.engine.tokenizer, text)
        tasks = [replace(t, document=text, doc_tokens=tokens) for t in doc.tasks]
        results += ev.evaluate(agent, tasks, doc.suite, group_of, batch or max(1, len(tasks)))
        if progress:
            progress.add(len(tasks))
        if log:
            log(
                f"{doc.suite}: {n}/{len(documents)} documents read ({doc.id}, {len(tasks)} questions, "
                f"{tokens:,} tokens)"
            )
    return results


def _agent(r: Reader, shift_tokens: int) -> MemoryAgent:
    return MemoryAgent(engine_for(r.settings), r.config, shift_tokens)


def _config(r: Reader, agent: MemoryAgent, **extra: Any) -> dict[str, Any]:
    return {
        "label": r.label,
        "agent": asdict(r.config),
        "engine": agent.engine.name,
        "shift_tokens": agent.shift_tokens,
        **extra,
    }


def _plan(
    agent: MemoryAgent,
    suites: Sequence[str],
    split: EvalSplit,
    limit: int | None,
    lengths: Sequence[int | None] | None,
    n: int,
    kinds: Sequence[str],
    categories: Sequence[str] | None,
    log: Callable[[str], None],
) -> list[tuple[str, list[EvalDocument]]]:
    """Every suite's documents, before any is read: the progress counts all their questions."""
    plan = []
    for suite in suites:
        docs = suite_documents(suite, split, agent.engine.tokenizer, limit, lengths, n, kinds)
        if categories and suite in ("contracts", "clauses"):
            asked = (replace(d, tasks=tuple(t for t in d.tasks if t.kind.split(":", 1)[1] in categories)) for d in docs)
            docs = [d for d in asked if d.tasks]
        if not docs:
            log(f"{suite}: no {split} questions yet, skipped")
            continue
        plan.append((suite, docs))
    return plan


def evaluate_suites(
    r: Reader,
    suites: Sequence[str],
    split: EvalSplit,
    out_dir: Path | None = None,
    limit: int | None = None,
    shift_tokens: int = 0,
    lengths: Sequence[int | None] | None = None,
    n: int = 16,
    kinds: Sequence[str] = ("single-needle",),
    batch: int | None = None,
    categories: Sequence[str] | None = None,
    track: bool = True,
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True),
    progress: Path | None = None,
) -> dict[str, Any]:
    """Read the suites' documents of one split as uploads and score them: results.json (every case and
    memory), table.md (per row and per suite, with where the misses happened) and plot.png in `out_dir`, and
    the scores in the experiment tracker (`track`). `categories`: ask only the contract and clause questions
    of these CUAD categories. `progress`: a `Progress` file to keep."""
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        raise EvalError(f"unknown suite {', '.join(unknown)}: choose from {', '.join(SUITES)}")
    begun = time.monotonic()
    agent = _agent(r, shift_tokens)
    plan = _plan(agent, suites, split, limit, lengths, n, kinds, categories, log)
    counter = Progress(progress, sum(len(d.tasks) for _, docs in plan for d in docs), begun)
    results: list[ev.CaseResult] = []
    timing = []
    for suite, docs in plan:
        started = time.monotonic()
        got = read_documents(agent, docs, batch, log, counter)
        seconds = time.monotonic() - started
        read = sum(c.doc_tokens for c in got)
        timing.append(
            {
                "set": suite,
                "questions": len(got),
                "seconds": round(seconds, 1),
                "document_tokens_read": read,
                "tokens_per_s": round(read / seconds, 1) if seconds else None,
            }
        )
        log(f"{suite}: {ev.score(got)} in {seconds:.0f} s")
        results += got
    config = _config(
        r,
        agent,
        split=split,
        suites=list(suites),
        limit=limit,
        n=n,
        kinds=list(kinds),
        lengths=[ev.length_label(x) for x in lengths] if lengths else None,
        categories=list(categories or []),
    )
    out = {
        "config": config,
        "summary": ev.summarize(results),
        "suites": ev.suite_summary(results),
        "timing": timing,
        "cases": [asdict(c) for c in results],
    }
    if out_dir is not None:
        ev.write(out, Path(out_dir))
    if track:
        name = time.strftime("%Y%m%d-%H%M%S") + (f"-{Path(out_dir).name}" if out_dir is not None else "")
        ev.log_scores(out, tracking_root() / "eval" / name)
    return out


def evaluate_cases(
    r: Reader,
    cases: Path,
    out_dir: Path | None = None,
    shift_tokens: int = 0,
    batch: int | None = None,
    progress: Path | None = None,
) -> list[ev.CaseResult]:
    """A person's cases file (any format an upload accepts; `training.suites.cases_documents`), read as uploads:
    the results in the file's order, written to `out_dir` (results.json, table.md, plot.png) when given.
    `progress`: a `Progress` file to keep."""
    begun = time.monotonic()
    documents = cases_documents(Path(cases))  # checks the file before an engine starts
    agent = _agent(r, shift_tokens)
    counter = Progress(progress, sum(len(d.tasks) for d in documents), begun)
    results = read_documents(agent, documents, batch, progress=counter)
    results.sort(key=lambda c: int(c.task_id.removeprefix("case-")))
    if out_dir is not None:
        out = {
            "config": _config(r, agent, cases=str(cases)),
            "summary": ev.summarize(results),
            "suites": ev.suite_summary(results),
            "cases": [asdict(c) for c in results],
        }
        ev.write(out, Path(out_dir))
    return results
