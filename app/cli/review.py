"""`longread review`: a contract review of a document (every CUAD category in one pass), read in this process,
printed as a checklist table, JSON, CSV or Markdown."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

from app.cli.common import local_admin, migrate_db
from app.settings import Settings


def cmd_review(settings: Settings, args: argparse.Namespace) -> int:
    from app.services import review
    from app.services.errors import NotFound
    from app.services.runner import run_readings

    migrate_db(settings)
    if not args.document.isdigit():
        raise SystemExit(f"longread review: {args.document!r} is not a document id (`longread ingest FILE` prints one)")
    me = local_admin(settings)
    try:  # read here, in this process: no worker is asked
        started = review.review(settings, int(args.document), args.chunk_tokens, args.memory_tokens, enqueue=False,
                                user=me)  # fmt: skip
    except (review.ReadingError, NotFound) as exc:
        raise SystemExit(f"longread review: {exc}") from None
    t0 = time.monotonic()
    run_readings(settings, [r.reading_id for r in started.rows])
    elapsed = time.monotonic() - t0
    view = review.filtered(review.show_review(settings, started.id, user=me), args.only)
    if args.json:
        print(json.dumps(dataclasses.asdict(view), default=str, ensure_ascii=False))
    elif args.csv:
        sys.stdout.write(review.to_csv(view))
    elif args.markdown:
        sys.stdout.write(review.to_markdown(view))
    else:
        width = max((len(r.category) for r in view.rows), default=0)
        for r in view.rows:
            where = review.pages_text(r, view.page_unit)
            print(f"{r.category:<{width}}  {review.answer_text(r)}" + (f"  [{where}]" if where else ""))
    print(f"review #{view.id}: {len(started.rows)} questions read in one pass in {elapsed:.1f} s", file=sys.stderr)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """review"""
    p = sub.add_parser("review", help="review a contract: all 41 CUAD categories in one pass, "
                       "read here; prints the checklist table",
                       description="Asks every CUAD category of the document (8 values such as the parties and "
                       "dates, 33 clauses as yes/no) in one pass, reads it in this process and prints each "
                       "category's answer with the page(s) where its evidence entered the memory. The review is "
                       "kept with the document: the UI and `GET /api/reviews/ID` show it.")  # fmt: skip
    p.add_argument("document", metavar="DOCUMENT_ID", help="the document to review (`longread ingest FILE` prints it)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the review as one JSON object on stdout")
    out.add_argument("--csv", action="store_true", help="print the table as CSV (a header line first)")
    out.add_argument("--markdown", action="store_true", help="print the table as a Markdown document")
    p.add_argument("--only", default="All", choices=["All", "Yes", "No", "Found", "Not found"],
                   help="print only these rows: answered Yes or No, with evidence found or not (default All)")
    p.add_argument("--chunk-tokens", type=int, help="tokens per chunk (default: the model's or the settings')")
    p.add_argument("--memory-tokens", type=int,
                   help="the memory's length cap in tokens (default: the model's or the settings')")
    p.set_defaults(func=cmd_review)
