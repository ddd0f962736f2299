"""`longread review`: a contract review of a document (every CUAD category in one pass), read as `ask` reads,
printed as a checklist table, JSON, CSV or Markdown."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from app.cli.common import local_admin, migrate_db
from app.settings import Settings


def cmd_review(settings: Settings, args: argparse.Namespace) -> int:
    from app.cli.readings import live_worker, read_to_end
    from app.services import review
    from app.services.errors import NotFound

    migrate_db(settings)
    if not args.document.isdigit():
        raise SystemExit(f"longread review: {args.document!r} is not a document id (`longread ingest FILE` prints one)")
    me = local_admin(settings)
    # As `ask`: a running server's worker has its model up, so it reads the review unless --in-process.
    server = None if args.in_process else live_worker(settings)
    try:
        started = review.review(
            settings, int(args.document), args.chunk_tokens, args.memory_tokens, enqueue=server is not None, user=me
        )
    except (review.ReadingError, NotFound) as exc:
        raise SystemExit(f"longread review: {exc}") from None
    read = read_to_end(settings, "review", [r.reading_id for r in started.rows], server, args.in_process)
    if read is None:
        return 130
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
            where = review.pages_text(r, view.page_unit, view.page_labels)
            print(f"{r.category:<{width}}  {review.answer_text(r)}" + (f"  [{where}]" if where else ""))
    print(f"review #{view.id}: {len(started.rows)} questions read in one pass {read[1]}", file=sys.stderr)
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """review"""
    p = sub.add_parser(
        "review",
        help="review a contract: all 41 CUAD categories in one pass, by the running "
        "server's worker, else in this process; prints the checklist table",
        description="Asks every CUAD category of the document (8 values such as the parties and "
        "dates, 33 clauses as yes/no) in one pass and prints each category's answer with the page(s) "
        "where its evidence entered the memory. As `ask`: with a worker of this database alive "
        "(`longread serve`), it reads the review and this command follows; with none, it reads here. "
        "The review is kept with the document: the UI and `GET /api/reviews/ID` show it.",
    )
    p.add_argument("document", metavar="DOCUMENT_ID", help="the document to review (`longread ingest FILE` prints it)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the review as one JSON object on stdout")
    out.add_argument("--csv", action="store_true", help="print the table as CSV (a header line first)")
    out.add_argument("--markdown", action="store_true", help="print the table as a Markdown document")
    p.add_argument(
        "--only",
        default="All",
        choices=["All", "Yes", "No", "Found", "Not found"],
        help="print only these rows: answered Yes or No, with evidence found or not (default All)",
    )
    p.add_argument("--chunk-tokens", type=int, help="tokens per chunk (default: the model's or the settings')")
    p.add_argument(
        "--memory-tokens", type=int, help="the memory's length cap in tokens (default: the model's or the settings')"
    )
    p.add_argument(
        "--in-process",
        action="store_true",
        help="read here even when a server's worker is running (starts this process's own model)",
    )
    p.set_defaults(func=cmd_review)
