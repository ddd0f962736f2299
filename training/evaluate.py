"""Evaluation: score what a memory agent read, say where each miss happened, and report it.

`evaluate` reads tasks in batched passes (a document's tasks together: they share its chunking, and with the
`chunk-first` template the engine can share the chunk's prompt prefix); `case_result` scores one answer with
the strict verifier (training/verifier.py, the rules the RL reward pays by), the fraction of parties named for
a Parties question, and where a miss happened from the reading's memories (training/misses.py). Reported per
suite and row (a document length, a question category) with n and a 95% interval, as a Markdown table, a PNG
plot and a JSON file of every case and memory. `longread eval` (app/services/evaluation.py) feeds it the
suites of training/suites.py read as uploads; any model is evaluated the same way, so numbers are comparable.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from inference.agent import MemoryAgent
from inference.contract_review import normalize
from training import misses
from training.tasks import Task
from training.tracking import Tracker
from training.verifier import answer_kind, exact_match, is_yes_no, party_recall, sub_em


@dataclass(frozen=True)
class CaseResult:
    task_id: str
    suite: str  # "contracts", "clauses", "books", "synthetic" (training/suites.py) or "cases"
    group: str  # the row it counts in: a length, a contract category, a question kind (suites.group_of)
    kind: str
    doc_tokens: int
    question: str
    answers: tuple[str, ...]
    answer: str  # what the agent answered (its last \boxed{}, else its whole output)
    sub_em: bool
    exact_match: bool
    final_memory: str
    chunks: int
    party_recall: float | None = None  # a Parties question: the fraction of its parties the answer names
    evidence: tuple[str, ...] = ()
    memories: tuple[str, ...] = ()  # after each chunk, in order (the reading's checkpoints)
    where: str = ""  # where a miss happened (training/misses.py)


def parties_named(answer: str, golds: Sequence[str]) -> float | None:
    """`party_recall` against the best gold when a gold lists a contract's parties, else None."""
    return max((party_recall(answer, g) for g in golds if answer_kind(g) == "parties"), default=None)


def case_result(task: Task, suite: str, group: str, answer: str, memories: Sequence[str]) -> CaseResult:
    """A read task scored, with where its miss happened."""
    correct = sub_em(answer, task.answers)
    return CaseResult(
        task.id,
        suite,
        group,
        task.kind,
        task.doc_tokens,
        task.question,
        task.answers,
        answer,
        correct,
        exact_match(answer, task.answers),
        memories[-1] if memories else "",
        len(memories),
        parties_named(answer, task.answers),
        task.evidence,
        tuple(memories),
        misses.where(memories, task.answers, task.evidence, correct),
    )


def length_label(doc_tokens: int | None) -> str:
    """How a length is named in tables.

    >>> length_label(2048), length_label(131072), length_label(None)
    ('2K', '128K', 'book')
    """
    if doc_tokens is None:
        return "book"
    return f"{doc_tokens // 1024}K" if doc_tokens % 1024 == 0 else str(doc_tokens)


def parse_lengths(spec: str) -> list[int | None]:
    """'2048,8K,book' -> [2048, 8192, None]."""
    out: list[int | None] = []
    for part in (p.strip().lower() for p in spec.split(",") if p.strip()):
        if part in ("book", "whole", "all"):
            out.append(None)
        elif m := re.fullmatch(r"(\d+)(k?)", part):
            out.append(int(m[1]) * (1024 if m[2] else 1))
        else:
            raise ValueError(f"bad length {part!r}: use token counts like 2048 or 8K, or 'book'")
    return out


def batches(tasks: Sequence[Task], size: int) -> list[list[Task]]:
    """Tasks packed into batches of at most `size`, one document's tasks together (split only when
    a document has more than `size` questions), documents of similar length side by side."""
    by_doc: dict[int, list[Task]] = {}
    for t in tasks:
        by_doc.setdefault(id(t.document), []).append(t)
    groups = sorted(by_doc.values(), key=lambda g: len(g[0].document))
    out: list[list[Task]] = []
    for g in groups:
        for i in range(0, len(g), size):
            part = g[i : i + size]
            if out and len(out[-1]) + len(part) <= size:
                out[-1].extend(part)
            else:
                out.append(list(part))
    return out


def evaluate(
    agent: MemoryAgent,
    tasks: Sequence[Task],
    suite: str,
    group: Callable[[Task], str],
    batch_size: int = 16,
    progress: Callable[[str], None] | None = None,
) -> list[CaseResult]:
    """Read every task (greedy) and score it; results in the order of `tasks`."""
    results: dict[str, CaseResult] = {}
    done = 0
    for batch in batches(tasks, batch_size):
        trajectories = agent.read_batch([(t.question, t.document) for t in batch], temperature=0.0)
        for t, tr in zip(batch, trajectories):
            results[t.id] = case_result(t, suite, group(t), tr.answer.answer if tr.answer else "", tr.memories)
        done += len(batch)
        if progress:
            progress(f"{suite}: {done}/{len(tasks)} read")
    return [results[t.id] for t in tasks]


def score(results: Sequence[CaseResult]) -> dict[str, float]:
    n = len(results)
    out = {
        "n": n,
        "sub_em": sum(r.sub_em for r in results) / n if n else 0.0,
        "exact_match": sum(r.exact_match for r in results) / n if n else 0.0,
    }
    if recalls := [r.party_recall for r in results if r.party_recall is not None]:
        out["party_recall"] = sum(recalls) / len(recalls)
    return out


def summarize(results: Sequence[CaseResult]) -> list[dict[str, Any]]:
    """One row per (suite, group, kind), plus an `all` row per group when it mixes kinds."""
    keys: dict[tuple[str, str], list[CaseResult]] = {}
    for r in results:
        keys.setdefault((r.suite, r.group), []).append(r)
    rows = []
    for (suite, group), rs in keys.items():
        kinds = sorted({r.kind for r in rs})
        for kind in kinds:
            sub = [r for r in rs if r.kind == kind]
            rows.append(
                {
                    "suite": suite,
                    "group": group,
                    "kind": kind,
                    "doc_tokens": round(sum(r.doc_tokens for r in sub) / len(sub)),
                    **score(sub),
                }
            )
        if len(kinds) > 1:
            rows.append(
                {
                    "suite": suite,
                    "group": group,
                    "kind": "all",
                    "doc_tokens": round(sum(r.doc_tokens for r in rs) / len(rs)),
                    **score(rs),
                }
            )
    return rows


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson interval of a proportion k/n.

    >>> [round(x, 3) for x in wilson(8, 16)]
    [0.28, 0.72]
    """
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return ((centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n))


def balanced_accuracy(results: Sequence[CaseResult]) -> float | None:
    """Mean of the accuracy on gold "Yes" and on gold "No" yes/no questions (always "No" scores 50%); None
    without questions of both answers."""
    by_gold: dict[str, list[bool]] = {}
    for r in results:
        if is_yes_no(r.answers):
            by_gold.setdefault(normalize(r.answers[0]), []).append(r.sub_em)
    if set(by_gold) != {"yes", "no"}:
        return None
    return sum(sum(v) / len(v) for v in by_gold.values()) / 2


def suite_summary(results: Sequence[CaseResult]) -> dict[str, dict[str, Any]]:
    """Per suite: n, sub-EM with its 95% interval, balanced accuracy of yes/no questions, and where the misses
    happened (training/misses.py `rates`)."""
    out: dict[str, dict[str, Any]] = {}
    for suite in dict.fromkeys(r.suite for r in results):
        rs = [r for r in results if r.suite == suite]
        k = sum(r.sub_em for r in rs)
        out[suite] = {
            "n": len(rs),
            "sub_em": k / len(rs),
            "interval": list(wilson(k, len(rs))),
            "balanced_accuracy": balanced_accuracy(rs),
            **misses.rates(rs),
        }
    return out


def suites_table(suites: dict[str, dict[str, Any]]) -> str:
    """Per suite: the score and where the misses happened (shares of the answerable questions)."""

    def pct(x: float | None) -> str:
        return "–" if x is None else f"{x:.1%}"

    header = (
        "| suite | n | sub-EM (95% interval) | balanced acc. | never entered memory | overwritten | "
        "in final memory, answer missed | answer right when final memory held it | evidence in final memory | "
        "kept something, nothing to find |"
    )
    lines = [header, "|---|---|---|---|---|---|---|---|---|---|"]
    for suite, s in suites.items():
        lo, hi = s["interval"]
        lines.append(
            f"| {suite} | {s['n']} | {s['sub_em']:.1%} ({lo:.1%}–{hi:.1%}) | {pct(s['balanced_accuracy'])} | "
            f"{pct(s['never-entered'])} | {pct(s['overwritten'])} | {pct(s['answer-missed'])} | "
            f"{pct(s['answered_when_held'])} (of {s['final_held']}) | "
            f"{pct(s.get('evidence_kept'))} (of {s.get('with_evidence', 0)}) | {pct(s['kept_something'])} "
            f"(of {s['unanswerable']}) |"
        )
    return "\n".join(lines) + "\n"


def markdown_table(rows: Sequence[dict[str, Any]], title: str = "") -> str:
    lines = [f"**{title}**", ""] if title else []
    lines += [
        "| set | length / category | kind | doc tokens | n | sub-EM | exact match |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['suite']} | {r['group']} | {r['kind']} | {r['doc_tokens']:,} | {r['n']} | "
            f"{r['sub_em']:.1%} | {r['exact_match']:.1%} |"
        )
    return "\n".join(lines) + "\n"


def plot(rows: Sequence[dict[str, Any]], path: Path, title: str = "") -> None:
    """Left: synthetic sub-EM (solid) and exact match (dashed) against document length, one line per
    kind; right: contracts per category. Either panel is left out when it has no rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    synthetic = [r for r in rows if r["suite"] == "synthetic"]
    contracts = [r for r in rows if r["suite"] == "contracts" and r["kind"] != "all"]
    panels = [p for p in (synthetic, contracts) if p]
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(6.5 * max(1, len(panels)), 4.2), squeeze=False)
    i = 0
    if synthetic:
        ax = axes[0][i]
        i += 1
        for kind in dict.fromkeys(r["kind"] for r in synthetic):
            pts = sorted((r["doc_tokens"], r["sub_em"], r["exact_match"]) for r in synthetic if r["kind"] == kind)
            xs = [p[0] for p in pts]
            line = ax.plot(xs, [p[1] for p in pts], marker="o", label=f"{kind} sub-EM")[0]
            ax.plot(xs, [p[2] for p in pts], marker="x", linestyle="--", color=line.get_color(), label=f"{kind} exact")
        ax.set_xscale("log", base=2)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("document tokens")
        ax.set_ylabel("accuracy")
        ax.set_title("planted facts")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if contracts:
        ax = axes[0][i]
        labels = [r["group"] for r in contracts]
        xs = range(len(labels))
        ax.bar([x - 0.2 for x in xs], [r["sub_em"] for r in contracts], width=0.4, label="sub-EM")
        ax.bar([x + 0.2 for x in xs], [r["exact_match"] for r in contracts], width=0.4, label="exact match")
        ax.set_xticks(
            list(xs), [f"{lab}\n(n={r['n']})" for lab, r in zip(labels, contracts)], rotation=30, ha="right", fontsize=7
        )
        ax.set_ylim(0, 1.02)
        ax.set_title("contracts")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def facts_per_doc(doc_tokens: int | None, n: int) -> int:
    """Questions planted per document: one per 4K tokens (up to n), so long documents are read once
    for many questions (batched, chunk prefix shared) while short ones still vary their text."""
    return n if doc_tokens is None else max(1, min(n, doc_tokens // 4096))


def log_scores(out: dict[str, Any], folder: Path) -> None:
    """An evaluation's scores in the experiment tracker: `SUITE/GROUP/KIND/sub_em` (and exact_match, n) and
    `speed/SET/tokens_per_s` at step 0, the table and the settings as text."""
    with Tracker(folder) as tracker:
        for row in out["summary"]:
            tracker.scalars(
                {k: row[k] for k in ("sub_em", "exact_match", "n")},
                0,
                prefix=f"{row['suite']}/{row['group']}/{row['kind']}/",
            )
        for t in out.get("timing", []):
            tracker.scalars({"tokens_per_s": t["tokens_per_s"]}, 0, prefix=f"speed/{t['set']}/")
        tracker.text("results", markdown_table(out["summary"], out["config"]["label"]))
        tracker.text("config", f"```\n{json.dumps(out['config'], indent=2)}\n```")


def write(out: dict[str, Any], out_dir: Path) -> None:
    """results.json (everything), table.md (the table and speed), plot.png."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")
    cfg = out["config"]
    title = (
        f"{cfg['label'] or cfg['engine']}: template {cfg['agent']['template_set']}, chunk "
        f"{cfg['agent']['chunk_tokens']}, memory {cfg['agent']['memory_tokens']}"
    )
    table = markdown_table(out["summary"], title)
    if out.get("suites"):
        table += "\n" + suites_table(out["suites"])
    if out.get("timing"):
        table += (
            "\n| set | questions | seconds | document tokens read (all questions) | tokens/s |\n|---|---|---|---|---|\n"
        )
        for t in out["timing"]:
            table += (
                f"| {t['set']} | {t['questions']} | {t['seconds']} | {t['document_tokens_read']:,} | "
                f"{t['tokens_per_s']} |\n"
            )
    (out_dir / "table.md").write_text(table, encoding="utf-8")
    plot(out["summary"], out_dir / "plot.png", title)


def cases_json(results: Sequence[CaseResult], documents: Sequence[str]) -> dict[str, Any]:
    """The `longread eval --cases FILE --json` object; `correct` is sub-EM (the evaluation metric)."""
    s = score(results)
    return {
        "cases": [
            {"document": d, "question": r.question, "answer": r.answer, "correct": r.sub_em}
            for r, d in zip(results, documents)
        ],
        "sub_em": s["sub_em"],
        "exact_match": s["exact_match"],
    }
