"""Pieces of sign-in that need no database: the failed-attempt window, password hashing, the redirect
after sign-in and the origin check."""

from __future__ import annotations

import pytest
from starlette.datastructures import Headers

from app.api.auth import _safe_next, same_origin
from app.services.users import FailedSignIns, UserError, hash_password, verify_password
from app.settings import Settings


def test_failures_are_counted_in_a_sliding_window():
    f = FailedSignIns(limit=3, window_s=60)
    keys = ["user:ann", "client:1.2.3.4"]
    for t in (0, 10, 20):
        assert f.retry_after(keys, now=t) is None
        f.failed(keys, now=t)
    assert f.retry_after(keys, now=30) == pytest.approx(30)  # the first failure leaves the window at 60
    assert f.retry_after(["user:other"], now=30) is None
    assert f.retry_after(["client:1.2.3.4"], now=30) == pytest.approx(30)  # the client is held too
    assert f.retry_after(keys, now=60.5) is None  # one failure has left the window
    f.forget("user:ann")
    assert f.retry_after(["user:ann"], now=30) is None


def test_passwords_are_argon2id_and_verified():
    h = hash_password("correct horse battery")
    assert h.startswith("$argon2id$") and "correct" not in h
    assert verify_password(h, "correct horse battery")
    assert not verify_password(h, "Correct horse battery")
    assert not verify_password(None, "anything at all")  # no password set: never signs in
    assert not verify_password("not-a-hash", "anything at all")
    with pytest.raises(UserError, match="at least 8"):
        hash_password("short")
    with pytest.raises(UserError, match="NUL"):
        hash_password("long enough\x00")


@pytest.mark.parametrize(
    "target,expected",
    [
        ("/", "/"),
        ("/?x=1", "/?x=1"),
        ("//evil.example/", "/"),
        ("https://evil.example/", "/"),
        ("/\\evil.example", "/"),
        ("", "/"),
        (None, "/"),
    ],
)
def test_only_a_path_of_this_site_is_followed_after_sign_in(target, expected):
    assert _safe_next(target) == expected


def test_the_origin_check():
    assert same_origin(Headers({"host": "app.example:8000", "origin": "http://app.example:8000"})) is True
    assert same_origin(Headers({"host": "app.example:8000", "origin": "https://evil.example"})) is False
    assert same_origin(Headers({"host": "app.example", "referer": "https://app.example/some/page"})) is True
    assert same_origin(Headers({"host": "app.example", "origin": "null"})) is False
    assert same_origin(Headers({"host": "app.example"})) is None


def test_production_settings_say_what_to_set(tmp_path):
    assert Settings(data_dir=tmp_path).serving_problems() == []  # embedded: nothing needed
    problems = Settings(mode="production", data_dir=tmp_path).serving_problems()
    assert len(problems) == 2
    assert "LONGREAD_SECRET_KEY" in problems[0] and "LONGREAD_DATABASE_URL" in problems[1]
    ok = Settings(mode="production", data_dir=tmp_path, secret_key="k" * 32, database_url="postgresql+psycopg://u@h/d")
    assert ok.serving_problems() == []
