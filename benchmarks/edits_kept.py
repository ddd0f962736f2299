"""Does a corrected memory hold? The app promises that a person can correct the memory at any step and let the
agent read on from the correction (edit and resume). Issue 38 saw a branch whose memory was edited at step 7 to
say which law governs answer "Section 14". This measures the promise on the path a person takes, with the shipped
reader and the embedded defaults (a fresh SQLite database):

1. each contract of the split is uploaded as its PDF, and its extraction questions are asked in one pass;
2. each reading of two or more chunks gets its memory at the middle step replaced by a note holding the expert's
   answer, as a person would type it ("Governing Law: Texas."), and is read on from there as a branch (a
   contract's branches in one pass);
3. each branch's answer is scored strictly (`training.verifier.sub_em`), and its final memory is checked for
   the answer (`training.misses.holds`).

Dev contracts chose how corrections are kept (app/services/corrections.py); held-out ones report it, once.

    .venv/bin/python -m benchmarks.edits_kept --limit 8 [--split held-out]   # runs/benchmarks/edits-kept.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from training.suites import SPLITS, suite_documents


def note(kind: str, gold: str) -> str:
    """The correction a person would type: the category and the expert's answer.

    >>> note("contract:Governing Law", "Texas")
    'Governing Law: Texas.'
    """
    return f"{kind.split(':', 1)[-1]}: {gold.rstrip('.')}."


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=SPLITS, default="dev", help="training/suites.py's contracts")
    ap.add_argument("--limit", type=int, default=8, help="the split's first N contracts (default 8)")
    ap.add_argument("--out", type=Path, default=Path("runs/benchmarks/edits-kept.json"))
    args = ap.parse_args(argv)

    from app.migrate import upgrade
    from app.services import documents, readings
    from app.services.llm import close_engines, engine_for
    from app.services.runner import run_readings
    from app.settings import Settings
    from training.evaluate import wilson
    from training.misses import holds
    from training.verifier import sub_em

    settings = Settings(data_dir=Path(tempfile.mkdtemp(prefix="edits-kept-")))
    upgrade(settings.resolved_database_url)
    rows: list[dict] = []
    started = time.monotonic()
    try:
        engine_for(settings).generate(["Say yes."], 1)  # the engine's start is not a reading's time
        for doc in suite_documents("contracts", args.split, limit=args.limit):
            uploaded, _ = documents.add_document(settings, doc.filename, doc.data())
            if uploaded.error:
                raise SystemExit(f"edits_kept: {doc.filename}: {uploaded.error}")
            asked = readings.ask(settings, uploaded.id, [t.question for t in doc.tasks], enqueue=False)
            run_readings(settings, [r.id for r in asked])
            branches = {}
            for task, r in zip(doc.tasks, (readings.show(settings, r.id) for r in asked)):
                row = {
                    "contract": doc.id,
                    "question": task.question,
                    "gold": task.answers[0],
                    "chunks": r.total_chunks,
                    "answer": r.answer,
                    "right": sub_em(r.answer or "", task.answers),
                }
                rows.append(row)
                if (r.total_chunks or 0) < 2:  # an edit at the last step only re-answers: nothing to read on
                    continue
                row["step"], row["edit"] = r.total_chunks // 2, note(task.kind, task.answers[0])
                branch = readings.edit(settings, r.id, row["step"], row["edit"], "benchmark", enqueue=False)
                branches[branch.id] = task, row
            run_readings(settings, list(branches))
            for branch_id, (task, row) in branches.items():
                b = readings.show(settings, branch_id)
                final = b.checkpoints[-1].memory if b.checkpoints else ""
                row.update(
                    branch_answer=b.answer,
                    branch_final_memory=final,
                    branch_right=sub_em(b.answer or "", task.answers),
                    kept=holds(final, task.answers, task.evidence),
                )
            print(f"{doc.id}: {len(doc.tasks)} questions, {len(branches)} edited", flush=True)
    finally:
        close_engines()
    edited = [r for r in rows if "edit" in r]
    summary = {"questions": len(rows), "edited": len(edited), "seconds": round(time.monotonic() - started, 1)}
    for key in ("right", "branch_right", "kept"):
        group = edited if key != "right" else rows
        k = sum(bool(r[key]) for r in group)
        summary[key] = {"k": k, "n": len(group), "interval": [round(x, 3) for x in wilson(k, len(group))]}
    summary["right_before_edit"] = sum(bool(r["right"]) for r in edited)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1), encoding="utf-8")
    for key, label in (
        ("right", "answers right, as read"),
        ("branch_right", "answers right after the edit"),
        ("kept", "final memories still holding the edit's answer"),
    ):
        s = summary[key]
        print(f"{label}: {s['k']}/{s['n']} ({s['interval'][0]:.1%}-{s['interval'][1]:.1%})")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
