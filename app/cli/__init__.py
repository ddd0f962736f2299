"""`longread` command: serve, worker, migrate, ingest, ask, readings, checkpoints, edit, cancel, retry, feedback,
eval, train, runs, models, users.

The commands run on the server machine and act as the local admin `local` (app/services/users.py)."""

from __future__ import annotations

import argparse

from app.cli import evaluate, models, readings, serve, training, users
from app.cli.serve import worker_command
from app.settings import get_settings

__all__ = ["build_parser", "main", "worker_command"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="longread", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for group in (serve, readings, evaluate, training, models, users):  # the order `longread --help` lists them in
        group.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(get_settings(), args)
