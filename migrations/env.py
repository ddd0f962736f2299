"""Alembic environment: the URL comes from the caller (app.migrate) or Longread's settings."""

from alembic import context

from app.db import get_engine
from app.models import Base
from app.settings import get_settings

url = context.config.get_main_option("sqlalchemy.url") or get_settings().resolved_database_url


def run_migrations() -> None:
    if context.is_offline_mode():
        context.configure(url=url, target_metadata=Base.metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = get_engine(url)
    with engine.connect() as connection:
        # render_as_batch lets later ALTERs work on SQLite too.
        context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations()
