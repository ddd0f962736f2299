"""What every command shares: the database brought up to date, and the local admin it acts as."""

from __future__ import annotations

from app.settings import Settings


def migrate_db(settings: Settings) -> None:
    from app.migrate import upgrade

    upgrade(settings.resolved_database_url)


def local_admin(settings: Settings):  # noqa: ANN201 - a UserView
    """The local admin, whom every command acts as."""
    from app.services.users import local_actor

    return local_actor(settings)
