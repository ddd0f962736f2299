"""Signing in, in a real browser, on `longread serve` in production mode (PostgreSQL, a secret key):
the app sends a visitor to the sign-in page; a reader sees only their own documents and no Users
panel; an admin's Users panel lists, adds, changes the role of and disables users."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from app.services import documents
from tests.authutil import PASSWORD, SECRET, new_user, production_settings
from tests.browser.conftest import LiveServer, _page, _serve
from tests.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.integration]


@pytest.fixture(scope="module")
def prod_server(tmp_path_factory, postgres_url) -> Iterator[LiveServer]:
    yield from _serve(
        tmp_path_factory,
        "--no-worker",
        env={
            "LONGREAD_MODE": "production",
            "LONGREAD_SECRET_KEY": SECRET,
            "LONGREAD_DATABASE_URL": postgres_url,
        },
    )


@pytest.fixture(scope="module")
def people(prod_server, postgres_url, tmp_path_factory):
    settings = production_settings(postgres_url, prod_server.data_dir)
    tag = uuid.uuid4().hex[:6]
    a, b, admin = new_user(settings, prefix="ann"), new_user(settings, prefix="ben"), new_user(settings, "admin", "ada")
    doc_a, _ = documents.add_document(settings, f"ann-notes-{tag}.txt", b"Ann's notes about the lighthouse.", user=a)
    doc_b, _ = documents.add_document(settings, f"ben-notes-{tag}.txt", b"Ben's notes about the harbour.", user=b)
    return {"settings": settings, "a": a, "b": b, "admin": admin, "doc_a": doc_a, "doc_b": doc_b}


@pytest.fixture
def browser_page(chromium, prod_server):
    yield from _page(chromium)


def _sign_in(page, url: str, username: str, password: str = PASSWORD) -> None:
    page.goto(url + "/")
    page.wait_for_url("**/login**")
    page.locator("#username").fill(username)
    page.locator("#password").fill(password)
    page.locator("#sign-in").click()
    page.locator("#ask").wait_for(state="visible", timeout=60_000)
    page.locator("#account-name").wait_for(timeout=30_000)


def _document_options(page) -> list[str]:
    page.locator("#document input").fill("")
    page.locator("ul[role=listbox] [role=option]").first.wait_for(timeout=30_000)
    return [o.get_attribute("aria-label") or "" for o in page.locator("ul[role=listbox] [role=option]").all()]


def test_a_visitor_is_sent_to_sign_in_and_a_reader_sees_only_their_own(browser_page, prod_server, people):
    page = browser_page
    page.goto(prod_server.url + "/")
    page.wait_for_url("**/login**")
    assert page.locator("#signin-form").is_visible()
    # A wrong password stays on the page with the message.
    page.locator("#username").fill(people["a"].username)
    page.locator("#password").fill("not the password")
    page.locator("#sign-in").click()
    assert "wrong username or password" in page.locator("#signin-error").inner_text()

    _sign_in(page, prod_server.url, people["a"].username)
    assert page.locator("#account-name").inner_text() == people["a"].username
    options = _document_options(page)
    assert any(people["doc_a"].title in o for o in options), options
    assert not any(people["doc_b"].title in o for o in options), options
    assert not page.locator("#admin-users").is_visible()  # no Users panel for a reader
    assert not page.get_by_role("tab", name="Admin", exact=True).is_visible()  # nor its tab
    assert page.locator("#users-table").count() == 0 or not page.locator("#users-table").is_visible()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "ui-signed-in-reader.png"), full_page=True)

    # The reader's UI session cannot call the admin's handlers either: the services refuse (no panel
    # data ever reaches the page).
    assert people["b"].username not in page.content()

    page.locator("#sign-out").click()
    page.wait_for_url("**/login")
    page.goto(prod_server.url + "/")
    page.wait_for_url("**/login**")  # signed out for good


def test_the_admin_users_panel(browser_page, prod_server, people):
    page = browser_page
    _sign_in(page, prod_server.url, people["admin"].username)
    page.get_by_role("tab", name="Admin", exact=True).click()  # the users have a tab of their own
    panel = page.locator("#admin-users")
    panel.wait_for(state="visible", timeout=30_000)
    cells = page.locator("#users-table [role=gridcell]")
    cells.filter(has_text=people["a"].username).first.wait_for(timeout=30_000)

    # Add a reader.
    newcomer = f"cy-{uuid.uuid4().hex[:6]}"
    page.locator("#new-username input, #new-username textarea").first.fill(newcomer)
    page.locator("#new-password input, #new-password textarea").first.fill("a fine long password")
    page.locator("#add-user").click()
    page.locator("#users-msg").get_by_text(f"Added {newcomer}").wait_for(timeout=30_000)
    cells.filter(has_text=newcomer).first.wait_for(timeout=30_000)

    # Make them an admin.
    page.locator("#pick-user input").fill(newcomer)
    page.locator(f'ul[role=listbox] [role=option][aria-label="{newcomer}"]').click()
    page.locator("#pick-role").get_by_text("admin").click()
    page.locator("#change-role").click()
    page.locator("#users-msg").get_by_text(f"{newcomer} is now admin").wait_for(timeout=30_000)

    # Disable Ben: he can no longer sign in.
    page.locator("#pick-user input").fill(people["b"].username)
    page.locator(f'ul[role=listbox] [role=option][aria-label="{people["b"].username}"]').click()
    page.locator("#disable-user").click()
    page.locator("#users-msg").get_by_text(f"{people['b'].username} is disabled").wait_for(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "ui-admin-users.png"), full_page=True)
    r = httpx.post(prod_server.url + "/api/auth/token", data={"username": people["b"].username, "password": PASSWORD})
    assert r.status_code == 401 and "disabled" in r.json()["detail"]
    r = httpx.post(prod_server.url + "/api/auth/token", data={"username": newcomer, "password": "a fine long password"})
    assert r.status_code == 200
    me = httpx.get(prod_server.url + "/api/auth/me", headers={"Authorization": f"Bearer {r.json()['access_token']}"})
    assert me.json()["role"] == "admin"
