"""What every command shares: the database brought up to date (the bundled versions in it), and the local admin
it acts as."""

from __future__ import annotations

import argparse

from app.settings import Settings


def migrate_db(settings: Settings) -> None:
    """The schema at head, and the bundled model and reader registered (app/services/bundled_versions.py)."""
    from app.db import session_scope
    from app.migrate import upgrade
    from app.services.bundled_versions import seed_bundled

    upgrade(settings.resolved_database_url)
    with session_scope(settings.resolved_database_url) as s:
        seed_bundled(s, settings)


def local_admin(settings: Settings):
    """The local admin, whom every command acts as."""
    from app.services.users import local_actor

    return local_actor(settings)


def add_sub_json(parser: argparse.ArgumentParser, help_text: str = "print one JSON object on stdout") -> None:
    """`--json` of a subcommand whose command has one too (`documents --json list` = `documents list --json`):
    without a default, since argparse copies a subcommand's defaults over what its command parsed."""
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=help_text)
