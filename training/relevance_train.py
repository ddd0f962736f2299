"""Train the extractive memory's sentence scorer (`inference.relevance`) on the training contracts: every one of
the 41 CUAD questions of every training contract, against its document's sentences (issue 51, item 1); and on
planted facts in windows of the training novels (training seeds, never the dev seed), so that what a question
shares with a sentence keeps its weight for questions that are not a contract's.

Per question: every evidence sentence (`training.capture_rows.labels`), the `--hard` non-evidence sentences that
share the most words with the question (the look-alikes: another clause of the same contract) and `--easy` others
drawn at random. A question with no evidence ("No" clauses) gives negatives only: that is what teaches a score
low enough to keep nothing. Logistic loss, AdaGrad, one contract a step; deterministic for a seed.

    .venv/bin/python -m training.relevance_train --out runs/relevance/r1 [--epochs 3]
    .venv/bin/python -m benchmarks.capture_probe --policy relevance --weights runs/relevance/r1/weights.npz
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from inference.capture import LexicalScorer, document_spans
from inference.relevance import SIZE, DocumentWords, Question, RelevanceScorer, SentenceHalf, features
from training.capture_rows import labels, passage_spans


def contract_examples(
    text: str, qa: list[dict], rng: np.random.Generator, hard: int, easy: int
) -> Iterator[tuple[np.ndarray, np.ndarray, int]]:
    """(indices, values, label) for the sampled sentences of every question of one document (`qa`: question and
    evidence passages, as in the contracts' cases)."""
    spans = document_spans(text)
    sentences = [text[a:b] for a, b in spans]
    halves = [SentenceHalf(s) for s in sentences]
    words = DocumentWords(h.stems for h in halves)  # the sentences' stems, counted once
    overlap = LexicalScorer().score(sentences, [x["question"] for x in qa])
    for x, lex in zip(qa, overlap):
        # where each passage first occurs, as the probe locates evidence: CUAD marks a party's name, and "Company"
        # occurs in half a contract's sentences
        marked = labels(spans, passage_spans(text, [e for e in x["evidence"] if e], first=True))
        pos = [i for i, on in enumerate(marked) if on]
        rest = np.asarray([i for i, on in enumerate(marked) if not on], dtype=int)
        picked = {int(i) for i in rest[np.argsort(-np.asarray(lex)[rest], kind="stable")][:hard]}
        others = np.asarray([i for i in rest if i not in picked], dtype=int)
        if len(others):
            picked |= set(rng.choice(others, size=min(easy, len(others)), replace=False).tolist())
        q = Question(x["question"], words)
        for i in pos:
            yield (*features(q, halves[i]), 1)
        for i in sorted(picked):
            yield (*features(q, halves[i]), 0)


class AdaGrad:
    def __init__(self, lr: float, l2: float) -> None:
        self.w = np.zeros(SIZE, dtype=np.float64)
        self.g2 = np.full(SIZE, 1e-8)
        self.lr, self.l2 = lr, l2

    def step(self, batch: list[tuple[np.ndarray, np.ndarray, int]]) -> float:
        """One logistic-loss step on a batch; returns its mean loss."""
        lengths = np.asarray([len(i) for i, _, _ in batch])
        idx = np.concatenate([i for i, _, _ in batch])
        val = np.concatenate([v for _, v, _ in batch]).astype(np.float64)
        y = np.asarray([label for _, _, label in batch], dtype=np.float64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        z = np.add.reduceat(self.w[idx] * val, starts)
        p = 1.0 / (1.0 + np.exp(-z))
        loss = float(np.mean(np.logaddexp(0.0, z) - y * z))
        grad = np.bincount(idx, weights=val * np.repeat(p - y, lengths), minlength=SIZE) / len(batch)
        touched = np.unique(idx)
        grad[touched] += self.l2 * self.w[touched]
        self.g2 += grad * grad
        self.w -= self.lr * grad / np.sqrt(self.g2)
        return loss


def planted_documents(count: int, seed: int) -> list[dict]:
    """`count` windows of the training novels (2K to 32K tokens) with planted facts, as cases: text and qa."""
    from transformers import AutoTokenizer

    from inference.models import model_folder
    from training.tasks.synthetic import synthetic_tasks

    tok, docs = AutoTokenizer.from_pretrained(model_folder("smollm2")), {}
    for i, length in enumerate((2048, 8192, 32768) * (count // 3 + 1)):
        facts = max(1, length // 4096)
        for t in synthetic_tasks(tok, "train", length, facts, seed=seed + 1 + i, facts_per_doc=facts):
            docs.setdefault(id(t.document), {"id": t.id, "text": t.document, "qa": []})["qa"].append(
                {"question": t.question, "evidence": list(t.evidence)}
            )
        if len(docs) >= count:
            break
    return list(docs.values())[:count]


def train(
    out: Path, epochs: int, lr: float, l2: float, hard: int, easy: int, seed: int, limit: int | None, planted: int
) -> RelevanceScorer:
    from training.tasks import CONTRACTS_TRAIN_DIR, NOT_FOR_TRAINING, contract_cases

    cases = [c for c in contract_cases(CONTRACTS_TRAIN_DIR) if c["id"] not in NOT_FOR_TRAINING][:limit]
    texts = {c["id"]: (CONTRACTS_TRAIN_DIR / c["txt"]).read_text(encoding="utf-8") for c in cases}
    for doc in planted_documents(planted, seed) if planted else []:
        cases.append(doc)
        texts[doc["id"]] = doc["text"]
    rng = np.random.default_rng(seed)
    opt = AdaGrad(lr, l2)
    log = out / "log.jsonl"
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    for epoch in range(epochs):
        losses = []
        for n, c in enumerate(rng.permutation(len(cases))):
            case = cases[c]
            batch = list(contract_examples(texts[case["id"]], case["qa"], rng, hard, easy))
            losses.append(opt.step(batch))
            if n % 50 == 0:
                print(
                    f"epoch {epoch} contract {n}/{len(cases)} loss {np.mean(losses[-50:]):.4f} "
                    f"{time.time() - t0:.0f} s",
                    flush=True,
                )
        with log.open("a") as f:
            f.write(json.dumps({"epoch": epoch, "loss": float(np.mean(losses)), "seconds": time.time() - t0}) + "\n")
    scorer = RelevanceScorer(opt.w.astype(np.float32))
    scorer.save(out / "weights.npz")
    (out / "config.json").write_text(
        json.dumps(
            {
                "epochs": epochs,
                "lr": lr,
                "l2": l2,
                "hard": hard,
                "easy": easy,
                "seed": seed,
                "documents": len(cases),
                "planted": planted,
            },
            indent=1,
        )
    )
    size = (out / "weights.npz").stat().st_size / 1e6
    print(f"wrote {out / 'weights.npz'} ({size:.1f} MB) in {time.time() - t0:.0f} s")
    return scorer


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--l2", type=float, default=1e-4)
    ap.add_argument("--hard", type=int, default=10, help="look-alike negatives a question")
    ap.add_argument("--easy", type=int, default=20, help="random negatives a question")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=int, default=None, help="first N training contracts")
    ap.add_argument("--planted", type=int, default=120, help="windows of the training novels with planted facts")
    args = ap.parse_args(argv)
    train(args.out, args.epochs, args.lr, args.l2, args.hard, args.easy, args.seed, args.limit, args.planted)


if __name__ == "__main__":
    main()
