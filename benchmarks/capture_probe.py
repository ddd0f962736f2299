"""The capture probe (issue 51, item 2): does the evidence reach the final memory? No answer step.

Every question of the dev split streams its document through the app's chunking (1024 tokens, the shipped
`chunk_tokens`, ending between sentences as the extractive reader's do) and an extractive memory policy
(inference/capture.py): each chunk's sentences are scored for the question, the memory keeps the best within
`memory_tokens`. Reported per suite and group, with n and 95% Wilson intervals, at each memory budget:

- `held`: the final memory holds the gold as `training.misses.holds` judges a reader's memory (the gold named,
  dates by meaning; a "Yes" clause: half the content words of a marked clause) — the reader's "never entered"
  is 1 - this;
- `overlap`: a kept sentence overlaps a marked evidence span of the document (no gold check);
- for "No" clauses, `kept`: the memory kept anything at all (a false keep).

Each at two thresholds: `fill` (no threshold: the memory is always full) and `t20`, the score the best 20% of
the "No" clause questions reach (their highest score; set on these same dev questions, so optimistic), which
keeps a clause for at most a fifth of "No" questions. `auroc`: how well a question's best score tells a "Yes"
clause from a "No".

Policies: `lexical` (question word overlap, the floor), `lead` (the document's first sentences, a positional
floor), `smollm2` (the untrained model as a pointer scorer, inference/capture_scorer.py), `reader` (the same with
the shipped adapter merged), `pointer` (the same with `--adapter`'s LoRA merged, e.g. a checkpoint of
training/capture_train.py; scores saved under `--label`, default the adapter's folder names), `relevance` (the
learned linear scorer of inference/relevance.py: the shipped weights, or `--weights` of a training/relevance_train.py
run).

    OMP_NUM_THREADS=1 nice -n 19 .venv/bin/python -m benchmarks.capture_probe --policy lexical
    ... --policy relevance --budgets 256 --keep -2 --open-keep -4 --margin 1    # the product's rule
    ... --policy reader --suites contracts synthetic --limit 30    # runs/probe/<policy>.json
    ... --policy pointer --adapter runs/pointer/r1/step-0010 --suites contracts --limit 8 --threads 2
    ... --policy relevance [--weights runs/relevance/r3/weights.npz]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

BUDGETS = (128, 256, 512)
SUITES = ("contracts", "clauses", "synthetic", "books")


def auroc(pos: list[float], neg: list[float]) -> float | None:
    """P(a positive's score > a negative's), ties half.

    >>> auroc([3.0, 2.0], [1.0, 2.0])
    0.875
    """
    if not pos or not neg:
        return None
    p, n = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float(((p > n).sum() + 0.5 * (p == n).sum()) / (p.size * n.size))


def evidence_spans(text: str, evidence: tuple[str, ...]) -> list[tuple[int, int]]:
    from training.evidence_tasks import verbatim

    spans = []
    for e in evidence:
        found = verbatim(text, e) if e.split() else None
        if found:
            at = text.find(found)
            spans.append((at, at + len(found)))
    return spans


def read_document(doc: Any, tok: Any, scorer: Any, chunk_tokens: int, max_questions: int | None) -> dict:
    """Chunk the document, score every sentence of every chunk for each question (the expensive part)."""
    from inference.capture import chunk_spans, document_spans
    from inference.chunking import split_into_chunks

    text, tasks = doc.text, doc.tasks[:max_questions]
    chunks = split_into_chunks(text, tok, chunk_tokens, whole_sentences=True)  # the extractive reader's chunks
    spans = document_spans(text)
    if hasattr(scorer, "start_document"):
        scorer.start_document()
    parts, scores, chunk_of = [], [], []
    t = time.time()
    for c in chunks:
        here = chunk_spans(spans, c.start_char, c.end_char)
        got = scorer.score([text[a:b] for a, b in here], [task.question for task in tasks], text)
        parts += here
        chunk_of += [c.index] * len(here)
        scores.append(np.asarray(got, dtype=float).reshape(len(tasks), len(here)))
    counts = [len(ids) for ids in tok([text[a:b] for a, b in parts], add_special_tokens=False)["input_ids"]]
    return {
        "tasks": tasks,
        "spans": parts,
        "chunk_of": np.asarray(chunk_of),
        "tokens": counts,
        "scores": np.concatenate(scores, axis=1),
        "seconds": time.time() - t,
        "chunks": len(chunks),
        "doc_tokens": chunks[-1].end_token if chunks else 0,
        "text": text,
    }


def save_read(path: Path, r: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        path,
        scores=r["scores"],
        spans=np.asarray(r["spans"]).reshape(-1, 2),
        chunk_of=r["chunk_of"],
        tokens=np.asarray(r["tokens"]),
        seconds=r["seconds"],
        chunks=r["chunks"],
        ids=np.asarray([t.id for t in r["tasks"]]),
    )


def load_read(path: Path, doc: Any) -> dict:
    z = np.load(path)
    by_id = {t.id: t for t in doc.tasks}
    return {
        "tasks": [by_id[i] for i in z["ids"].tolist()],
        "spans": [tuple(x) for x in z["spans"].tolist()],
        "chunk_of": z["chunk_of"],
        "tokens": z["tokens"].tolist(),
        "scores": z["scores"],
        "text": doc.text,
        "seconds": float(z["seconds"]) if "seconds" in z else 0.0,
        "chunks": int(z["chunks"]) if "chunks" in z else int(z["chunk_of"].max(initial=-1)) + 1,
    }


def final_memory(read: dict, q: int, budget: int, threshold: float, margin: float | None = None) -> list:
    """Stream question q's scored sentences chunk by chunk through `assemble`: the memory after the last chunk.
    With `margin`, only sentences within it of the memory's best stay after each chunk."""
    from inference.capture import Sentence, assemble, first_of_each

    text, memory = read["text"], []
    row, spans, chunk_of = read["scores"][q], read["spans"], read["chunk_of"]
    for k in range(read["chunks"]):
        idx = np.nonzero((chunk_of == k) & (row >= threshold))[0]
        chunk = [
            Sentence(text[spans[i][0] : spans[i][1]], spans[i][0], spans[i][1], float(row[i]), read["tokens"][i])
            for i in idx
        ]
        kept = set(first_of_each(s.line() for s in memory + chunk))  # a line the memory holds is not kept twice
        chunk = [s for i, s in enumerate(chunk, len(memory)) if i in kept]
        memory = assemble(memory, chunk, budget, threshold)
        if margin is not None and memory:  # as the product keeps (MemoryAgent.extract)
            memory = [s for s in memory if s.score >= max(x.score for x in memory) - margin]
    return memory


def transformed(scores: np.ndarray, chunk_of: np.ndarray, how: str) -> np.ndarray:
    """The scores as kept: `raw`, or `chunk-share`, log P(i | not none) = s_i - logsumexp of its chunk's s (from
    the pointer's log-odds against none; the chunk's order stays, what moves is how chunks compare).

    >>> transformed(np.log([[1.0, 3.0, 2.0]]), np.array([0, 0, 1]), "chunk-share").round(3).tolist()
    [[-1.386, -0.288, 0.0]]
    """
    if how == "raw":
        return scores
    out = scores.copy()
    for k in np.unique(chunk_of):
        mine = chunk_of == k
        out[:, mine] -= np.logaddexp.reduce(scores[:, mine], axis=1, keepdims=True)
    return out


def chunk_rank(read: dict, q: int, evidence: list[tuple[int, int]]) -> int | None:
    """The best rank (1 = first) an evidence sentence gets among its own chunk's sentences: how well the scorer
    orders a chunk, whatever its scores are worth against other chunks'. Ties go to the earlier sentence, as in
    `assemble`. None without located evidence."""
    from training.capture_rows import best_rank, labels

    row, chunk_of = read["scores"][q], read["chunk_of"]
    marked = np.asarray(labels(read["spans"], evidence), dtype=int)
    ranks = [
        best_rank(row[chunk_of == k].tolist(), marked[chunk_of == k].tolist()) for k in np.unique(chunk_of[marked == 1])
    ]
    return min(ranks, default=None)


def judge(
    read: dict, budget: int, threshold: float, margin: float | None = None, open_threshold: float | None = None
) -> list[dict]:
    """Each question's final memory judged; with `open_threshold`, an open question's bar (the agent's
    `OPEN_KEEP_THRESHOLD`), `threshold` a yes/no question's."""
    from inference.agent import keep_threshold
    from inference.capture import render
    from training.misses import holds, unanswerable
    from training.suites import group_of

    out = []
    for q, task in enumerate(read["tasks"]):
        bar = threshold if open_threshold is None else keep_threshold(task.question, threshold, open_threshold)
        memory = final_memory(read, q, budget, bar, margin)
        ev = evidence_spans(read["text"], task.evidence)
        rank = chunk_rank(read, q, ev)
        out.append(
            {
                "id": task.id,
                "group": group_of(task),
                "no": unanswerable(task.answers),
                "held": bool(memory) and holds(render(memory), task.answers, task.evidence),
                "overlap": any(s.start < b and a < s.end for s in memory for a, b in ev),
                "kept": bool(memory),
                "best": float(read["scores"][q].max(initial=-math.inf)),
                "rank": rank,
            }
        )
    return out


def table(rows: list[dict], suite: str) -> list[dict]:
    from training.evaluate import wilson

    by = defaultdict(list)
    for r in rows:
        by[r["group"]].append(r)
        if suite in ("contracts", "books", "synthetic"):
            by["all 8" if suite == "contracts" else "all"].append(r)
    out = []
    for group, rs in sorted(by.items()):
        key = "kept" if all(r["no"] for r in rs) else "held"
        k, n = sum(r[key] for r in rs), len(rs)
        lo, hi = wilson(k, n)
        ranked = [r["rank"] for r in rs if r["rank"] is not None]
        out.append(
            {
                "group": group,
                "measure": key,
                "k": k,
                "n": n,
                "rate": k / n,
                "low": max(0.0, lo),
                "high": hi,
                "overlap": sum(r["overlap"] for r in rs) / n,
                "ranked": len(ranked),
                "top1": sum(x == 1 for x in ranked) / len(ranked) if ranked else None,
                "top3": sum(x <= 3 for x in ranked) / len(ranked) if ranked else None,
            }
        )
    return out


class LeadScorer:
    """The document's first sentences first, whatever the question: the floor a positional prior gives (a contract's
    title, parties and date open it)."""

    def __init__(self) -> None:
        self.seen = 0

    def start_document(self) -> None:
        self.seen = 0

    def score(self, chunk: list[str], questions: list[str], document: str | None = None) -> list[list[float]]:
        scores = [-float(self.seen + i) for i in range(len(chunk))]
        self.seen += len(chunk)
        return [scores for _ in questions]


def make_scorer(policy: str, adapter: Path | None = None, weights: Path | None = None) -> Any:
    from inference.capture import LexicalScorer
    from inference.capture_scorer import PointerScorer
    from inference.models import model_folder
    from inference.relevance import WEIGHTS, RelevanceScorer

    if policy == "lexical":
        return LexicalScorer()
    if policy == "relevance":
        return RelevanceScorer.load(weights or WEIGHTS)
    if policy == "lead":
        return LeadScorer()
    if policy == "pointer":
        if adapter is None:
            raise SystemExit("--policy pointer reads a trained adapter: give --adapter runs/pointer/<run>/step-<n>")
        return PointerScorer.from_folder(model_folder("smollm2", adapter))
    return PointerScorer.from_folder(model_folder({"smollm2": "smollm2", "reader": "smollm2-reader"}[policy]))


def label_of(policy: str, adapter: Path | None, label: str | None, weights: Path | None = None) -> str:
    """The name a run's scores and tables are saved under: `--label`, else the policy, a pointer's with its
    adapter's run and step.

    >>> label_of("pointer", Path("runs/pointer/r1/step-0010"), None), label_of("lexical", None, None)
    ('pointer-r1-step-0010', 'lexical')
    """
    if label:
        return label
    if policy == "pointer" and adapter:
        return f"pointer-{adapter.parent.name}-{adapter.name}"
    return f"relevance-{weights.parent.name}" if policy == "relevance" and weights else policy


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--policy", choices=("lexical", "lead", "smollm2", "reader", "pointer", "relevance"), default="lexical"
    )
    ap.add_argument("--weights", type=Path, default=None, help="relevance weights (default: the shipped ones)")
    ap.add_argument("--adapter", type=Path, default=None, help="a trained pointer's LoRA folder (--policy pointer)")
    ap.add_argument("--label", default=None, help="name of the saved scores and tables (default from the policy)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    ap.add_argument("--suites", nargs="+", choices=SUITES, default=list(SUITES))
    ap.add_argument("--limit", type=int, default=None, help="first N documents of each suite (of each length)")
    ap.add_argument("--max-chunks", type=int, default=None, help="skip documents of more chunks (a cheap subset)")
    ap.add_argument("--questions", type=int, default=None, help="first N questions of each document")
    ap.add_argument("--lengths", nargs="+", default=["2048", "32768"], help="planted-fact lengths; 'book' whole")
    ap.add_argument("--budgets", nargs="+", type=int, default=list(BUDGETS), help="memory_tokens to assemble at")
    ap.add_argument(
        "--transform",
        choices=("raw", "chunk-share"),
        default="raw",
        help="chunk-share: a sentence's log share of its chunk's labels, none left out",
    )
    ap.add_argument("--chunk-tokens", type=int, default=1024)
    ap.add_argument(
        "--keep",
        type=float,
        default=None,
        help="also judge the product's rule: this threshold (the agent's KEEP_THRESHOLD) and --margin",
    )
    ap.add_argument("--margin", type=float, default=None, help="with --keep: the agent's KEEP_MARGIN")
    ap.add_argument(
        "--open-keep", type=float, default=None, help="with --keep: an open question's (OPEN_KEEP_THRESHOLD)"
    )
    ap.add_argument("--from-scores", action="store_true", help="assemble from the scores a run saved, no model")
    ap.add_argument("--resume", action="store_true", help="reuse the saved scores of documents already read")
    ap.add_argument("--out", type=Path, default=None, help="default runs/probe/<policy>.json")
    args = ap.parse_args(argv)

    import torch
    from transformers import AutoTokenizer

    from inference.chunking import token_starts
    from inference.models import model_folder
    from training.suites import suite_documents

    torch.set_num_threads(args.threads)
    tok = AutoTokenizer.from_pretrained(model_folder("smollm2"))
    scorer = None if args.from_scores else make_scorer(args.policy, args.adapter, args.weights)
    label = label_of(args.policy, args.adapter, args.label, args.weights)
    lengths = [None if x == "book" else int(x) for x in args.lengths]
    reads: dict[str, list[dict]] = {}
    for suite in args.suites:
        docs = suite_documents(suite, "dev", tokenizer=tok, limit=args.limit, lengths=lengths)
        reads[suite] = []
        if args.max_chunks:
            docs = [d for d in docs if len(token_starts(d.text, tok)) <= args.max_chunks * args.chunk_tokens]
        for doc in docs:
            keep = Path("runs/probe/scores") / label / f"{suite}-{doc.id}.npz"  # re-assembled without a model
            if keep.is_file() and (args.from_scores or args.resume):
                reads[suite].append(load_read(keep, doc))
                continue
            if args.from_scores:
                continue
            r = read_document(doc, tok, scorer, args.chunk_tokens, args.questions)
            reads[suite].append(r)
            save_read(keep, r)
            print(
                f"{suite} {doc.id}: {r['chunks']} chunks, {len(r['tasks'])} questions, {r['seconds']:.1f} s", flush=True
            )
    for r in [r for rs in reads.values() for r in rs]:
        r["scores"] = transformed(r["scores"], r["chunk_of"], args.transform)
    no_best = [
        float(r["scores"][q].max(initial=-math.inf))
        for r in reads.get("clauses", [])
        for q, t in enumerate(r["tasks"])
        if t.answers == ("No",)
    ]
    thresholds = {"fill": (-math.inf, None, None)}
    if no_best:
        thresholds["t20"] = (float(np.quantile(no_best, 0.8)), None, None)
    if args.keep is not None:  # the product's rule (MemoryAgent.extract): its thresholds and margin
        thresholds["keep"] = (args.keep, args.margin, args.open_keep)
    result: dict[str, Any] = {
        "policy": label,
        "args": {k: str(v) for k, v in vars(args).items()},
        "thresholds": thresholds,
        "suites": {},
    }
    for suite, rs in reads.items():
        seconds, chunks = sum(r["seconds"] for r in rs), sum(r["chunks"] for r in rs)
        entry: dict[str, Any] = {
            "documents": len(rs),
            "chunks": chunks,
            "seconds": seconds,
            "questions": sum(len(r["tasks"]) for r in rs),
            "tables": {},
        }
        for name, (th, margin, open_th) in thresholds.items():
            for budget in args.budgets:
                rows = [row for r in rs for row in judge(r, budget, th, margin, open_th)]
                entry["tables"][f"{name}/{budget}"] = table(rows, suite)
                if suite == "clauses" and name == "fill":
                    yes, no = [x["best"] for x in rows if not x["no"]], [x["best"] for x in rows if x["no"]]
                    entry["auroc"] = auroc(yes, no)
        result["suites"][suite] = entry
        print(
            f"\n## {suite}: {len(rs)} documents, {chunks} chunks, {seconds:.0f} s scoring "
            f"({seconds / max(chunks, 1):.2f} s a chunk)"
            + (f", AUROC Yes/No {entry['auroc']:.3f}" if entry.get("auroc") is not None else "")
        )
        for key, rows in entry["tables"].items():
            for t in rows:
                print(
                    f"{key:>9} {t['group']:<36} {t['measure']:<5} {t['k']:>4}/{t['n']:<4} {t['rate']:6.1%} "
                    f"[{t['low']:.1%}, {t['high']:.1%}]  overlap {t['overlap']:.1%}"
                    + (f"  in-chunk top1 {t['top1']:.0%} top3 {t['top3']:.0%} of {t['ranked']}" if t["ranked"] else "")
                )
    out = args.out or Path("runs/probe") / f"{label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
