"""Users, tokens and production-mode apps for the auth, ownership and sign-in tests."""

from __future__ import annotations

import uuid
from pathlib import Path

from fastapi.testclient import TestClient

from app.migrate import upgrade
from app.services import users
from app.settings import Settings

SECRET = "test-secret-key-" + "x" * 24
PASSWORD = "correct horse battery"


def production_settings(postgres_url: str, data_dir: Path, **kw) -> Settings:
    s = Settings(
        mode="production",
        secret_key=SECRET,
        database_url=postgres_url,
        data_dir=data_dir,
        chunk_tokens=100,
        memory_tokens=20,
        answer_tokens=20,
        **kw,
    )
    upgrade(postgres_url)
    return s


def new_user(settings: Settings, role: str = "reader", prefix: str = "u") -> users.UserView:
    """A user with a unique name (the PostgreSQL database is shared by the whole test session)."""
    admin = users.local_actor(settings)
    return users.add_user(settings, f"{prefix}-{uuid.uuid4().hex[:8]}", PASSWORD, role, user=admin)


def token(client: TestClient, username: str, password: str = PASSWORD) -> str:
    r = client.post("/api/auth/token", data={"username": username, "password": password})
    assert r.status_code == 200, r.text
    return r.json()["access_token"]


def bearer(tok: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tok}"}
