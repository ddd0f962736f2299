"""`longread documents`: list the documents, delete one (with its readings, checkpoints, feedback, stored file
and page images)."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from app.cli.common import add_sub_json, local_admin, migrate_db
from app.settings import Settings


def cmd_documents(settings: Settings, args: argparse.Namespace) -> int:
    from app.services import document_deletion, documents
    from app.services.errors import NotFound

    migrate_db(settings)
    me = local_admin(settings)
    if args.documents_command == "delete":
        try:
            gone = document_deletion.delete_document(settings, args.document_id, user=me)
        except (NotFound, document_deletion.DeletionError) as exc:
            raise SystemExit(f"longread documents delete: {exc}") from None
        if args.json:
            print(json.dumps(asdict(gone)))
        else:
            print(
                f"deleted document {gone.document_id} ({gone.title}): {gone.readings} reading(s), "
                f"{gone.checkpoints} checkpoint(s), {gone.feedback} feedback; stored file "
                + ("removed" if gone.file_removed else "kept (another document has the same bytes)")
            )
        return 0
    listed = documents.all_documents(settings, user=me)
    if args.json:
        print(
            json.dumps(
                {
                    "documents": [
                        {
                            "id": d.id,
                            "title": d.title,
                            "status": d.status,
                            "format": d.format,
                            "error": d.error,
                            "token_count": d.token_count,
                        }
                        for d in listed
                    ]
                }
            )
        )
    else:
        for d in listed:
            print(f"{d.id:>5}  {d.status:<7} {d.title}" + (f"  ({d.error})" if d.error else ""))
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """documents"""
    docs = sub.add_parser(
        "documents",
        help="documents: list, delete",
        description="Without a subcommand: list the documents, the failed ones last.",
    )
    docs.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    docs.set_defaults(func=cmd_documents, documents_command=None)
    docs_sub = docs.add_subparsers(dest="documents_command")
    ls = docs_sub.add_parser("list", help="every document: id, status, title")
    add_sub_json(ls)
    rm = docs_sub.add_parser(
        "delete",
        help="delete a document with its readings, checkpoints, feedback, stored "
        "file and page images (feedback copied into a training run stays in its folder)",
    )
    rm.add_argument("document_id", type=int, metavar="ID", help="the document's id (`longread documents`)")
    add_sub_json(rm, "print what was removed as one JSON object")
