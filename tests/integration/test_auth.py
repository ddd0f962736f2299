"""Users and sign-in against real PostgreSQL: the token flow, wrong passwords, disabled users, the
brute-force limit, production mode answering 401 on every route without credentials, the refusals
to start unsafely, the browser session (cookie flags, CSRF) and the embedded mode acting as the
local admin."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from starlette.routing import Mount

from app.services import users
from app.settings import Settings
from app.web import UnsafeSettings, create_app
from tests.authutil import PASSWORD, bearer, new_user, production_settings, token

pytestmark = pytest.mark.integration
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _fresh_limits():
    users.SIGN_INS.clear()
    yield
    users.SIGN_INS.clear()


@pytest.fixture
def prod(postgres_url, tmp_path) -> Settings:
    return production_settings(postgres_url, tmp_path / "data")


@pytest.fixture
def client(prod):
    with TestClient(create_app(prod)) as c:
        yield c


def test_token_flow(client, prod):
    alice = new_user(prod)
    r = client.post("/api/auth/token", data={"username": alice.username, "password": PASSWORD})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["token_type"] == "bearer" and body["expires_in"] == prod.token_ttl_s
    me = client.get("/api/auth/me", headers=bearer(body["access_token"]))
    assert me.status_code == 200 and me.json()["username"] == alice.username and me.json()["role"] == "reader"
    assert client.get("/api/documents", headers=bearer(body["access_token"])).json() == []
    # A tampered token, or one signed with another key, names nobody.
    assert client.get("/api/auth/me", headers=bearer(body["access_token"] + "x")).status_code == 401
    other = Settings(**{**prod.model_dump(), "secret_key": "another-secret-key-0123456789"})
    assert client.get("/api/auth/me", headers=bearer(users.issue_token(other, alice))).status_code == 401


def test_an_expired_token_is_refused(client, prod, monkeypatch):
    alice = new_user(prod)
    monkeypatch.setattr(time, "time", lambda real=time.time: real() - prod.token_ttl_s - 5)
    old = users.issue_token(prod, alice)
    monkeypatch.undo()
    r = client.get("/api/auth/me", headers=bearer(old))
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"


def test_a_wrong_password_and_an_unknown_user_get_the_same_answer(client, prod):
    alice = new_user(prod)
    wrong = client.post("/api/auth/token", data={"username": alice.username, "password": "not the password"})
    nobody = client.post("/api/auth/token", data={"username": "nobody-" + alice.username, "password": "whatever1"})
    assert wrong.status_code == nobody.status_code == 401
    assert wrong.json() == nobody.json() == {"detail": "wrong username or password"}
    assert "not the password" not in str(users.SIGN_INS._fails)  # never kept, let alone logged


def test_a_disabled_user_cannot_sign_in_or_use_an_earlier_token(client, prod):
    alice = new_user(prod)
    tok = token(client, alice.username)
    assert client.get("/api/auth/me", headers=bearer(tok)).status_code == 200
    users.update_user(prod, alice.id, disabled=True, user=users.local_actor(prod))
    assert client.get("/api/auth/me", headers=bearer(tok)).status_code == 401
    assert client.get("/api/documents", headers=bearer(tok)).status_code == 401
    r = client.post("/api/auth/token", data={"username": alice.username, "password": PASSWORD})
    assert r.status_code == 401 and "disabled" in r.json()["detail"]
    # A changed password ends the tokens signed before it, too.
    bob = new_user(prod)
    tok = token(client, bob.username)
    users.update_user(prod, bob.id, password="a brand new password", user=users.local_actor(prod))
    assert client.get("/api/auth/me", headers=bearer(tok)).status_code == 401


def test_failed_sign_ins_are_rate_limited_with_a_clear_message(client, prod):
    alice = new_user(prod)
    for _ in range(users.MAX_FAILURES):
        assert (
            client.post("/api/auth/token", data={"username": alice.username, "password": "guess1234"}).status_code
            == 401
        )
    r = client.post("/api/auth/token", data={"username": alice.username, "password": PASSWORD})  # even the right one
    assert r.status_code == 429, r.text
    wait = int(r.headers["retry-after"])
    assert 1 <= wait <= users.FAILURE_WINDOW_S
    assert r.json()["detail"] == f"too many failed sign-ins; try again in {wait} s"
    # The sign-in page says the same.
    page = client.post(
        "/login", data={"username": alice.username, "password": PASSWORD}, headers={"Origin": "http://testserver"}
    )
    assert page.status_code == 429 and "try again in" in page.text
    # Per client as well: the same client guessing other names is stopped too.
    users.SIGN_INS.clear()
    for i in range(users.MAX_FAILURES):
        client.post("/api/auth/token", data={"username": f"spray-{i}-{alice.username}", "password": "guess1234"})
    r = client.post("/api/auth/token", data={"username": "spray-last", "password": "guess1234"})
    assert r.status_code == 429


def _concrete(path: str) -> str:
    return (
        path.replace("{document_id}", "1")
        .replace("{reading_id}", "1")
        .replace("{step}", "1")
        .replace("{page}", "1")
        .replace("{user_id}", "1")
        .replace("{path:path}", "x")
    )


def _all_routes(client, prod) -> list[tuple[str, str]]:
    """(method, concrete path) of every operation in the OpenAPI spec, every plain route of the app, and
    every route of the mounted Gradio UI."""
    spec = client.get("/openapi.json", headers=bearer(token(client, new_user(prod).username))).json()
    pairs = [(m.upper(), _concrete(p)) for p, ops in spec["paths"].items() for m in ops]

    def walk(routes, prefix: str) -> None:
        for route in routes:
            if isinstance(route, Mount):
                walk(route.routes, prefix + route.path.rstrip("/"))
            elif hasattr(route, "original_router"):  # FastAPI's included router
                walk(route.original_router.routes, prefix + (route.include_context.prefix or ""))
            elif getattr(route, "path", ""):
                for method in sorted((getattr(route, "methods", None) or {"GET"}) - {"HEAD", "OPTIONS"}):
                    pairs.append((method, prefix + _concrete(route.path)))

    walk(client.app.routes, "")
    return sorted(set(pairs))


def test_production_answers_401_on_every_route_without_credentials(client, prod):
    """Every route of the app (the API's, the sign-in page's and the mounted Gradio UI's), every method."""
    pairs = _all_routes(client, prod)
    client.cookies.clear()
    seen = [(m, p, client.request(m, p or "/", headers={"Origin": "http://testserver"}).status_code) for m, p in pairs]
    public = {"/login", "/logout", "/healthz", "/api/auth/token", "/favicon.ico"}
    wrong = [(m, p, c) for m, p, c in seen if p not in public and not p.startswith("/app-static") and c != 401]
    assert not wrong, f"answered without credentials: {wrong}"
    api_paths = {p for _, p, _ in seen if p.startswith("/api/")}
    assert {"/api/documents", "/api/readings/1", "/api/users", "/api/feedback/export", "/api/users/1"} <= api_paths
    assert {"/openapi.json", "/docs", "/"} <= {p for _, p, _ in seen}
    assert sum(p.startswith("/gradio_api") for _, p, _ in seen) > 5  # the UI's own routes were tried too
    assert client.get("/healthz").status_code == 200
    assert client.get("/login").status_code == 200
    assert client.get("/app-static/longread.css").status_code == 200
    print(
        f"\n{len(seen)} route/method pairs tried without credentials, each answered 401 but the public "
        f"{sorted(public)}:"
    )
    for m, p, c in seen:
        print(f"  {c}  {m:<6} {p}")


def test_a_browser_is_sent_to_the_sign_in_page(client):
    r = client.get("/", headers={"Accept": "text/html"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login?next=%2F"
    assert client.get("/", follow_redirects=False).status_code == 401  # a script is told, not redirected


def test_sign_in_sets_a_safe_session_cookie_and_csrf_is_refused(client, prod):
    alice = new_user(prod)
    same = {"Origin": "http://testserver"}
    bad = client.post("/login", data={"username": alice.username, "password": "nope-nope"}, headers=same)
    assert bad.status_code == 401 and "wrong username or password" in bad.text
    r = client.post(
        "/login",
        data={"username": alice.username, "password": PASSWORD, "next": "//evil.example/"},
        headers=same,
        follow_redirects=False,
    )
    assert r.status_code == 303 and r.headers["location"] == "/"  # no open redirect
    cookie = r.headers["set-cookie"]
    assert "longread_session=" in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie.replace("Lax", "lax")
    assert client.get("/api/auth/me").json()["username"] == alice.username  # the cookie is kept by the client
    # State-changing requests with the cookie: from this origin fine, from another (or none) refused.
    assert client.post("/api/readings/999999/cancel", headers=same).status_code == 404
    evil = client.post("/api/readings/999999/cancel", headers={"Origin": "https://evil.example"})
    assert evil.status_code == 403 and "cross-origin" in evil.json()["detail"]
    assert client.post("/api/readings/999999/cancel", headers={"Referer": "https://evil.example/x"}).status_code == 403
    assert client.post("/api/readings/999999/cancel").status_code == 403  # no Origin nor Referer with a cookie
    # Sign-in itself is guarded too (login CSRF).
    assert (
        client.post(
            "/login",
            data={"username": alice.username, "password": PASSWORD},
            headers={"Origin": "https://evil.example"},
        ).status_code
        == 403
    )
    out = client.post("/logout", headers=same, follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert client.get("/api/auth/me").status_code == 401


def test_refuses_to_start_with_the_default_secret_or_sqlite(postgres_url, tmp_path):
    for key in ("", "change-me", "short"):
        s = Settings(mode="production", secret_key=key, database_url=postgres_url, data_dir=tmp_path)
        with pytest.raises(UnsafeSettings, match="LONGREAD_SECRET_KEY"):
            create_app(s)
    s = Settings(mode="production", secret_key="a-long-enough-secret-key-123456", data_dir=tmp_path)
    with pytest.raises(UnsafeSettings, match="needs PostgreSQL, not SQLite: set LONGREAD_DATABASE_URL") as exc:
        create_app(s)
    assert "LONGREAD_SECRET_KEY" not in str(exc.value)
    # `longread serve` says the same and exits before starting anything.
    env = {**os.environ, "LONGREAD_MODE": "production", "LONGREAD_DATA_DIR": str(tmp_path / "d")}
    for key in ("LONGREAD_SECRET_KEY", "LONGREAD_DATABASE_URL"):
        env.pop(key, None)
    p = subprocess.run(
        [sys.executable, "-m", "app.cli", "serve", "--no-worker"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode != 0
    assert "LONGREAD_SECRET_KEY" in p.stderr and "LONGREAD_DATABASE_URL" in p.stderr, p.stderr
    assert not (tmp_path / "d" / "longread.db").exists()  # refused before migrating


def test_embedded_mode_acts_as_the_local_admin(tmp_path):
    from app.migrate import upgrade

    s = Settings(data_dir=tmp_path / "data")
    upgrade(s.resolved_database_url)
    with TestClient(create_app(s)) as c:
        me = c.get("/api/auth/me").json()
        assert me["username"] == users.LOCAL_USERNAME and me["role"] == "admin" and me["has_password"] is False
        up = c.post("/api/documents", files={"file": ("n.txt", b"A short note about lamps.")})
        assert up.status_code == 201
        assert [d["id"] for d in c.get("/api/documents").json()] == [up.json()["id"]]
        assert c.get("/api/users").status_code == 200  # an admin
        assert c.get("/", headers={"Accept": "text/html"}).status_code == 200  # straight to the app
        # Another site's page cannot drive the local app.
        assert (
            c.post(
                "/api/documents", files={"file": ("x.txt", b"x")}, headers={"Origin": "https://evil.example"}
            ).status_code
            == 403
        )
    # The local admin cannot sign in (no password) until it is given one.
    with pytest.raises(users.SignInFailed):
        users.authenticate(s, users.LOCAL_USERNAME, "")
