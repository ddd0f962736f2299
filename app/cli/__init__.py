"""`longread` command: serve, worker, migrate, ingest, ask, documents, readings, checkpoints, edit, cancel, retry,
feedback, review, eval, train, runs, models, users.

The commands run on the server machine and act as the local admin `local` (app/services/users.py)."""

from __future__ import annotations

import argparse

from app.cli import documents, evaluate, models, readings, review, serve, training, users
from app.cli.serve import worker_command
from app.settings import get_settings

__all__ = ["build_parser", "main", "worker_command"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="longread", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    # the order `longread --help` lists them in
    for group in (serve, readings, documents, review, evaluate, training, models, users):
        group.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(get_settings(), args)
