"""What every command shares: the database brought up to date (the bundled versions in it), and the local admin
it acts as."""

from __future__ import annotations

from app.settings import Settings


def migrate_db(settings: Settings) -> None:
    """The schema at head, and the bundled model and reader registered (app/services/bundled_versions.py)."""
    from app.db import session_scope
    from app.migrate import upgrade
    from app.services.bundled_versions import seed_bundled

    upgrade(settings.resolved_database_url)
    with session_scope(settings.resolved_database_url) as s:
        seed_bundled(s, settings)


def local_admin(settings: Settings):  # noqa: ANN201 - a UserView
    """The local admin, whom every command acts as."""
    from app.services.users import local_actor

    return local_actor(settings)
