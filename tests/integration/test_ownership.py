"""Each reader sees and touches only their own documents and what hangs off them, against real
PostgreSQL in production mode: for every document, reading, checkpoint, branch, feedback, page-image
and export route, reader B using reader A's ids gets a 404 identical to a missing id's; ids that try
path traversal or overflow get 404/422, never 500; admin routes answer 401 without credentials and
403 to a reader; a cross-origin POST carrying the session cookie is refused; and the services refuse
on their own, without the API in front of them.

Run with -s to see the table of every attempt and the status it got."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.db import session_scope
from app.services import documents, feedback, models, provenance, readings, runner, users
from app.services.errors import NotFound
from app.settings import Settings
from app.web import create_app
from tests.authutil import bearer, new_user, production_settings, token
from tests.fakes import FakeEngine
from training.tasks import DATA_DIR

pytestmark = pytest.mark.integration

CONTRACT = DATA_DIR / "contracts" / "pdf" / "cuad-000.pdf"
if not CONTRACT.is_file():
    CONTRACT = Path(__file__).resolve().parents[2] / "tests" / "data" / "cuad-000.pdf"
MISSING = 2_000_000_000  # a valid id that names nothing
TABLE: list[tuple[str, str, str, int]] = []


def _memory_then_answer(prompt: str) -> str:
    return (
        "The agreement is governed by the laws of somewhere."
        if "<memory>" in prompt and "boxed" not in prompt
        else "\\boxed{somewhere}"
    )


@pytest.fixture(scope="module")
def world(postgres_url, tmp_path_factory, tokenizer):
    """Readers A and B, an admin; A owns a PDF with a finished reading, a branch of it and feedback."""
    users.SIGN_INS.clear()
    settings = production_settings(postgres_url, tmp_path_factory.mktemp("own"))
    a, b, admin = new_user(settings, prefix="a"), new_user(settings, prefix="b"), new_user(settings, "admin", "adm")
    doc, existing = documents.add_document(settings, "contract.pdf", CONTRACT.read_bytes(), user=a)
    assert doc.status == "ready" and not existing, doc.error
    (r,) = readings.ask(settings, doc.id, ["Which law governs?"], enqueue=False, user=a)
    runner.run_readings(settings, [r.id], FakeEngine(tokenizer, _memory_then_answer))
    assert readings.show(settings, r.id, user=a).status == "done"
    branch = readings.edit(settings, r.id, 1, "An edited memory.", enqueue=False, user=a)
    fb = feedback.add_feedback(settings, r.id, "correct", comment="fine", user=a)
    with TestClient(create_app(settings)) as client:
        yield {
            "settings": settings,
            "a": a,
            "b": b,
            "admin": admin,
            "doc": doc.id,
            "reading": r.id,
            "branch": branch.id,
            "feedback": fb.id,
            "client": client,
            "ta": token(client, a.username),
            "tb": token(client, b.username),
            "tadmin": token(client, admin.username),
        }


#: (method, path template, JSON body): every route that takes a document or reading id
ROUTES = [
    ("GET", "/api/documents/{d}", None),
    ("GET", "/api/documents/{d}/pages/1.png", None),
    ("GET", "/api/documents/{d}/readings", None),
    ("POST", "/api/documents/{d}/readings", {"question": "Who signed?"}),
    ("GET", "/api/documents/{d}/feedback", None),
    ("GET", "/api/readings/{r}", None),
    ("GET", "/api/readings/{r}/checkpoints", None),
    ("GET", "/api/readings/{r}/checkpoints/1", None),
    ("GET", "/api/readings/{r}/provenance", None),
    ("GET", "/api/readings/{r}/branches", None),
    ("POST", "/api/readings/{r}/branches", {"step": 1, "memory": "B was here"}),
    ("POST", "/api/readings/{r}/cancel", None),
    ("POST", "/api/readings/{r}/retry", None),
    ("GET", "/api/readings/{r}/feedback", None),
    ("POST", "/api/readings/{r}/feedback", {"verdict": "incorrect", "comment": "B was here"}),
]


def _call(w, method: str, path: str, tok: str, body: dict | None):
    return w["client"].request(method, path, headers=bearer(tok), json=body)


def _path(template: str, doc: object, reading: object) -> str:
    return template.replace("{d}", str(doc)).replace("{r}", str(reading))


def _normalised(response, *ids: object) -> tuple[int, str]:
    text = response.text
    for i in ids:
        text = re.sub(rf"\b{re.escape(str(i))}\b", "ID", text)
    return response.status_code, text


@pytest.mark.parametrize("target", ["reading", "branch"])
@pytest.mark.parametrize("method,template,body", ROUTES, ids=[f"{m} {t}" for m, t, _ in ROUTES])
def test_another_readers_ids_answer_exactly_as_missing_ones(world, method, template, body, target):
    w = world
    theirs = _path(template, w["doc"], w[target])
    missing_doc = _path(template, MISSING, w[target]) if "{d}" in template else _path(template, w["doc"], MISSING)
    got = _call(w, method, theirs, w["tb"], body)
    missing = _call(w, method, missing_doc, w["tb"], body)
    TABLE.append((f"{method} {template} ({target})", "reader B, A's id", "", got.status_code))
    TABLE.append((f"{method} {template} ({target})", "reader B, missing id", "", missing.status_code))
    assert got.status_code == 404, got.text
    assert _normalised(got, w["doc"], w[target]) == _normalised(missing, MISSING), (got.text, missing.text)
    assert "B was here" not in str(readings.show(w["settings"], w["reading"], user=w["a"]))


def test_the_owner_gets_them(world):
    """The same routes answer A (so the 404s above are about ownership, not broken routes)."""
    w = world
    for method, template, body in ROUTES:
        if template.endswith(("/cancel", "/retry")):
            continue  # (a finished reading cannot be retried: 422, tested elsewhere)
        r = _call(w, method, _path(template, w["doc"], w["reading"]), w["ta"], body)
        TABLE.append((f"{method} {template}", "reader A, own id", "", r.status_code))
        assert r.status_code in (200, 201), (method, template, r.status_code, r.text)


def test_lists_and_the_export_hold_only_ones_own(world):
    w = world
    c = w["client"]
    assert [d["id"] for d in c.get("/api/documents", headers=bearer(w["ta"])).json()] == [w["doc"]]
    assert c.get("/api/documents", headers=bearer(w["tb"])).json() == []
    export_b = c.get("/api/feedback/export", headers=bearer(w["tb"]))
    export_a = c.get("/api/feedback/export", headers=bearer(w["ta"]))
    export_admin = c.get("/api/feedback/export", headers=bearer(w["tadmin"]))
    TABLE.append(
        ("GET /api/feedback/export", "reader B", f"{len(export_b.text.splitlines())} lines", export_b.status_code)
    )
    assert export_b.status_code == 200 and export_b.text == ""
    assert f'"reading_id": {w["reading"]}' in export_a.text
    assert f'"reading_id": {w["reading"]}' in export_admin.text  # the admin's export is the training data


def test_the_same_bytes_uploaded_by_another_reader_are_their_own_document(world):
    w = world
    c = w["client"]
    r = c.post("/api/documents", headers=bearer(w["tb"]), files={"file": ("mine.pdf", CONTRACT.read_bytes())})
    TABLE.append(("POST /api/documents", "reader B, A's bytes", "", r.status_code))
    assert r.status_code == 201, r.text  # not "already uploaded" (that would be A's document)
    b_doc = r.json()["id"]
    assert b_doc != w["doc"] and r.json()["filename"] == "mine.pdf"
    again = c.post("/api/documents", headers=bearer(w["tb"]), files={"file": ("again.pdf", CONTRACT.read_bytes())})
    assert again.status_code == 200 and again.json()["id"] == b_doc  # B's own earlier upload
    # One stored blob, two documents; A still cannot see B's, nor B A's readings.
    blobs = [p for p in w["settings"].blob_dir.rglob("*") if p.is_file()]
    assert len(blobs) == 1
    assert c.get(f"/api/documents/{b_doc}", headers=bearer(w["ta"])).status_code == 404
    assert c.get(f"/api/documents/{b_doc}/readings", headers=bearer(w["tb"])).json() == []


HOSTILE_IDS = [
    "..%2F..",
    "..%2F..%2Fetc%2Fpasswd",
    "1;drop",
    "1%20OR%201=1",
    "99999999999999999999999",
    "-1",
    "0",
    "2147483648",
    "1e3",
    "%00",
]


@pytest.mark.parametrize("method,template,body", ROUTES, ids=[f"{m} {t}" for m, t, _ in ROUTES])
def test_hostile_ids_get_404_or_422_never_500(world, method, template, body):
    w = world
    for bad in HOSTILE_IDS:
        r = w["client"].request(method, _path(template, bad, bad), headers=bearer(w["ta"]), json=body)
        TABLE.append((f"{method} {template}", f"id {bad}", "", r.status_code))
        assert r.status_code in (404, 422), (bad, r.status_code, r.text)
    r = w["client"].get(f"/api/documents/{w['doc']}/pages/..%2F..%2Fx.png", headers=bearer(w["ta"]))
    assert r.status_code in (404, 422)
    huge = w["client"].get(f"/api/documents/{w['doc']}/pages/99999999999999999999.png", headers=bearer(w["ta"]))
    assert huge.status_code == 404


ADMIN_ROUTES = [
    ("GET", "/api/users", None),
    ("POST", "/api/users", {"username": "mallory", "password": "12345678xx"}),
    ("PATCH", "/api/users/1", {"role": "reader"}),
]


def test_admin_routes_need_an_admin(world):
    w = world
    c = w["client"]
    c.cookies.clear()
    for method, path, body in ADMIN_ROUTES:
        anon = c.request(method, path, json=body)
        reader = c.request(method, path, json=body, headers=bearer(w["ta"]))
        TABLE.append((f"{method} {path}", "no credentials", "", anon.status_code))
        TABLE.append((f"{method} {path}", "reader's token", "", reader.status_code))
        assert anon.status_code == 401, anon.text
        assert reader.status_code == 403, reader.text
    assert c.get("/api/users", headers=bearer(w["tadmin"])).status_code == 200
    made = c.post(
        "/api/users",
        headers=bearer(w["tadmin"]),
        json={"username": f"c-{w['a'].username}", "password": "another password", "role": "reader"},
    )
    assert made.status_code == 201, made.text
    patched = c.patch(f"/api/users/{made.json()['id']}", headers=bearer(w["tadmin"]), json={"role": "admin"})
    assert patched.status_code == 200 and patched.json()["role"] == "admin"
    assert c.patch(f"/api/users/{MISSING}", headers=bearer(w["tadmin"]), json={"disabled": True}).status_code == 404
    assert (
        c.patch("/api/users/99999999999999999999", headers=bearer(w["tadmin"]), json={"disabled": True}).status_code
        == 404
    )


def test_a_cross_origin_post_with_the_session_cookie_is_refused(world):
    w = world
    c = w["client"]
    c.cookies.clear()
    signed_in = c.post(
        "/login",
        data={"username": w["a"].username, "password": "correct horse battery"},
        headers={"Origin": "http://testserver"},
        follow_redirects=False,
    )
    assert signed_in.status_code == 303 and "longread_session" in c.cookies
    attempts = [
        ("POST", f"/api/readings/{w['reading']}/feedback", {"verdict": "incorrect"}),
        ("POST", f"/api/documents/{w['doc']}/readings", {"question": "Exfiltrate?"}),
        ("POST", f"/api/readings/{w['reading']}/cancel", None),
    ]
    before = len(readings.document_readings(w["settings"], w["doc"], user=w["a"]))
    for method, path, body in attempts:
        r = c.request(method, path, json=body, headers={"Origin": "https://evil.example"})
        TABLE.append((f"{method} {path}", "cookie, Origin evil.example", "", r.status_code))
        assert r.status_code == 403, r.text
    assert len(readings.document_readings(w["settings"], w["doc"], user=w["a"])) == before
    # The same cookie from our own page works (the refusal is about the origin, not the cookie).
    ok = c.get(f"/api/readings/{w['reading']}")
    assert ok.status_code == 200
    c.cookies.clear()


def test_the_services_refuse_on_their_own(world):
    """Without the API: the functions the UI and the CLI call check the user themselves."""
    w = world
    s: Settings = w["settings"]
    b, d, r = w["b"], w["doc"], w["reading"]
    calls = {
        "documents.show_document": lambda: documents.show_document(s, d, user=b),
        "documents.page_image": lambda: documents.page_image(s, d, 1, user=b),
        "documents.document_text": lambda: documents.document_text(s, d, user=b),
        "readings.ask": lambda: readings.ask(s, d, ["?"], enqueue=False, user=b),
        "readings.document_readings": lambda: readings.document_readings(s, d, user=b),
        "readings.show": lambda: readings.show(s, r, user=b),
        "readings.step": lambda: readings.step(s, r, 1, user=b),
        "readings.branches": lambda: readings.branches(s, r, user=b),
        "readings.edit": lambda: readings.edit(s, r, 1, "x", enqueue=False, user=b),
        "readings.cancel": lambda: readings.cancel(s, r, user=b),
        "readings.retry": lambda: readings.retry(s, r, enqueue=False, user=b),
        "feedback.add_feedback": lambda: feedback.add_feedback(s, r, "correct", user=b),
        "feedback.reading_feedback": lambda: feedback.reading_feedback(s, r, user=b),
        "feedback.document_feedback": lambda: feedback.document_feedback(s, d, user=b),
        "provenance.provenance": lambda: provenance.provenance(s, r, user=b),
        "provenance.passage_in_context": lambda: provenance.passage_in_context(s, r, 0, 10, user=b),
    }
    for name, call in calls.items():
        with pytest.raises(NotFound):
            call()
        TABLE.append((name, "service, reader B", "NotFound", 404))
    assert documents.all_documents(s, user=b) == [] or all(x.id != d for x in documents.all_documents(s, user=b))
    assert feedback.export_rows(s, user=b) == []
    # Admin-only services refuse a reader.
    with pytest.raises(users.Forbidden):
        users.list_users(s, b)
    with pytest.raises(users.Forbidden):
        users.add_user(s, "x-" + b.username, "a long password", user=b)
    with pytest.raises(users.Forbidden):
        users.update_user(s, b.id, role="admin", user=b)
    with session_scope(s.resolved_database_url) as sess:
        with pytest.raises(users.Forbidden):
            models.register_version(sess, "sneaky", "smollm2", template_set="memagent", user=b)
        with pytest.raises(users.Forbidden):
            models.activate_version(sess, 0, b)
        with pytest.raises(users.Forbidden):
            models.list_versions(sess, b)
    # In production, a call that names no user is refused, not taken for the local admin.
    with pytest.raises(users.NotSignedIn):
        readings.show(s, r)
    with pytest.raises(users.NotSignedIn):
        documents.all_documents(s)
    # The admin may open a reader's objects by id (support, training data) …
    assert readings.show(s, r, user=w["admin"]).id == r
    # … but the admin's own lists are the admin's.
    assert all(x.id != d for x in documents.all_documents(s, user=w["admin"]))


ESCAPING_NAMES = [
    "../../escaped.txt",
    "../../../../../../tmp/longread-escaped.txt",
    "/tmp/longread-absolute.txt",
    "..\\..\\escaped-win.txt",
    "nul\x00byte.txt",
    "/",
    "..",
    "",
]


def test_upload_names_cannot_escape_the_storage_folder(world):
    """Storage is content-addressed: the file name is shown (cleaned), never used to store or open."""
    w = world
    data_dir = w["settings"].data_dir
    before = {p for p in data_dir.rglob("*")}
    for i, name in enumerate(ESCAPING_NAMES):
        body = f"note {i}: the spare key hangs behind the barometer.".encode()
        r = w["client"].post("/api/documents", headers=bearer(w["ta"]), files={"file": (name, body)})
        TABLE.append(
            (
                "POST /api/documents",
                f"file name {name!r}",
                r.json().get("filename", "") if r.status_code < 300 else "",
                r.status_code,
            )
        )
        assert r.status_code in (201, 422), (name, r.status_code, r.text)
        if r.status_code == 201:
            shown = r.json()["filename"]
            assert "/" not in shown and "\\" not in shown and "\x00" not in shown and shown not in ("", "..", "."), (
                shown
            )
            sha = hashlib.sha256(body).hexdigest()
            assert (w["settings"].blob_dir / sha[:2] / sha).read_bytes() == body  # stored under its hash only
    for outside in (
        Path("/tmp/longread-escaped.txt"),
        Path("/tmp/longread-absolute.txt"),
        data_dir.parent / "escaped.txt",
        data_dir.parent.parent / "escaped.txt",
    ):
        assert not outside.exists(), outside
    new = {p for p in data_dir.rglob("*")} - before
    assert new and all(w["settings"].blob_dir in p.parents or p == w["settings"].blob_dir for p in new), new


def test_print_the_table(world):
    """The attempts above with the status each got (pytest -s shows it)."""
    if not TABLE:
        return  # run alone: nothing to show (never a skip: CI counts skips as failures)
    width = max(len(r[0]) for r in TABLE)
    print(f"\n{'route':<{width}}  {'attempt':<30}  status")
    for route, attempt, note, code in TABLE:
        print(f"{route:<{width}}  {attempt:<30}  {code}{'  ' + note if note else ''}")
