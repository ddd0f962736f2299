"""A contract review's time against one question's, on the same contract and the embedded defaults (the settings'
engine, chunk and memory sizes; a fresh SQLite database). The target (issue 37): the 41-question review of a
40-page contract takes at most 3x the time of one question. Both are read by the app's own runner, as a worker
does, after the engine is up (a vLLM server's start is not counted): first one question (Governing Law), then the
review, whose 41 questions are read in one pass.

    .venv/bin/python -m benchmarks.review_speed                     # cuad-025.pdf, 40 pages (long: tens of minutes)
    .venv/bin/python -m benchmarks.review_speed --pages 2           # its first 2 pages: a check that it runs

Prints both times and the ratio; writes runs/benchmarks/review-speed[-pN].json.
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import tempfile
import time
from pathlib import Path

from training.tasks import CONTRACTS_DIR

CONTRACT = CONTRACTS_DIR / "pdf" / "cuad-025.pdf"  # 40 pages
TARGET = 3.0


def first_pages(pdf: bytes, pages: int | None) -> bytes:
    """The PDF cut to its first `pages` pages (None: all of it)."""
    if pages is None:
        return pdf
    from pypdf import PdfReader, PdfWriter

    reader, writer = PdfReader(io.BytesIO(pdf)), PdfWriter()
    for p in reader.pages[:pages]:
        writer.add_page(p)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--contract", type=Path, default=CONTRACT, help="a contract PDF (default: cuad-025, 40 pages)")
    ap.add_argument("--pages", type=int, help="read only its first N pages (a quick check; the target is for 40)")
    ap.add_argument("--out", type=Path, help="the JSON result (default: runs/benchmarks/review-speed[-pN].json)")
    args = ap.parse_args(argv)

    from app.cli.common import migrate_db
    from app.db import session_scope
    from app.services import documents, readings, review
    from app.services.llm import close_engines, engine_for
    from app.services.models import active_version, serving_settings
    from app.services.runner import run_readings
    from app.settings import Settings

    data_dir = Path(tempfile.mkdtemp(prefix="review-speed-"))
    settings = Settings(data_dir=data_dir)  # the embedded defaults, LONGREAD_* from the environment
    # the schema and the bundled versions, as a fresh install has them: its active reader keeps sentences (with
    # the schema alone, no version was active and the settings' model rewrote its memory)
    migrate_db(settings)
    pdf = first_pages(args.contract.read_bytes(), args.pages)
    doc, _ = documents.add_document(settings, args.contract.name, pdf)
    if doc.error:
        raise SystemExit(f"review_speed: {args.contract}: {doc.error}")
    try:
        with session_scope(settings.resolved_database_url) as db:
            version = active_version(db)
            model = version.name
            serving = serving_settings(settings, version)
        engine_for(serving).generate(["Say yes."], 1)  # the active version's engine: its start is not the reading's

        def timed(ids: list[int]) -> float:
            start = time.monotonic()
            run_readings(settings, ids)
            return time.monotonic() - start

        (one,) = readings.ask(
            settings, doc.id, ["Which state's or country's law governs this agreement?"], enqueue=False
        )
        one_s = timed([one.id])
        started = review.review(settings, doc.id, enqueue=False)
        review_s = timed([r.reading_id for r in started.rows])
        done = review.show_review(settings, started.id)
    finally:
        close_engines()
    shown = documents.show_document(settings, doc.id, with_page_map=False)
    chunks = readings.show(settings, one.id).total_chunks
    result = {
        "contract": args.contract.name,
        "pages": shown.pages,
        "tokens": shown.token_count,
        "chunks": chunks,
        "engine": settings.engine,
        "model": model,
        "chunk_tokens": serving.chunk_tokens,
        "memory_tokens": serving.memory_tokens,
        "max_batch": settings.max_batch,
        "questions": len(done.rows),
        "answered": sum(r.status == "done" for r in done.rows),
        "one_question_s": round(one_s, 1),
        "review_s": round(review_s, 1),
        "ratio": round(review_s / one_s, 2),
        "target_ratio": TARGET,
        "machine": platform.node(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(
        f"{args.contract.name}: {shown.pages} pages, {shown.token_count} tokens, {chunks} chunks of "
        f"{serving.chunk_tokens} ({settings.engine}, {model})"
    )
    print(f"one question: {one_s:.1f} s")
    print(f"review ({len(done.rows)} questions, one pass): {review_s:.1f} s")
    print(f"ratio: {review_s / one_s:.2f} (target <= {TARGET})")
    out = args.out or Path("runs/benchmarks") / f"review-speed{'' if args.pages is None else f'-p{args.pages}'}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
