"""Users: readers and admins, their passwords, signing in (with a limit on failed attempts) and the
signed tokens that say who a request comes from.

Who acts: every use case takes the acting user (`user=`, a `UserView`). Readers see and touch only
their own documents and what is reached through them (readings, checkpoints, branches, feedback, page
images, the feedback export); another user's id answers NotFound exactly as a missing id does.
Admins may open any object by id (they run the server: support, training data); their lists (the
documents menu, "already uploaded") are their own, like everyone's. Admin only: managing users,
model versions and training.

`user=None` in a use case means "nobody said": in embedded mode that is the local admin `local` (one
person on one machine, no sign-in); in production it is refused (NotSignedIn), so an entry point that
forgets to pass the user fails closed. The CLI runs on the server and acts as `local` explicitly
(`local_actor`). Session-level helpers (`require_document(session, id, user)`, …) treat None as the
system itself (the runner, tests): only services call them.

Passwords are hashed with argon2id (argon2-cffi) and never logged or returned.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from itsdangerous import BadSignature, SignatureExpired, URLSafeTimedSerializer
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.db import session_scope
from app.models import Role, User
from app.services.errors import NotFound
from app.services.views import NOT_SERVED
from app.settings import Settings

LOCAL_USERNAME = "local"
ROLES = tuple(r.value for r in Role)
USERNAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
MIN_PASSWORD_CHARS, MAX_PASSWORD_CHARS = 8, 1024
#: failed sign-ins allowed per username and per client address within FAILURE_WINDOW_S
MAX_FAILURES, FAILURE_WINDOW_S = 5, 60.0


class NotSignedIn(PermissionError):
    """No valid session or token (HTTP 401)."""


class Forbidden(PermissionError):
    """Signed in, but the action is for admins (HTTP 403)."""


class SignInFailed(PermissionError):
    """Wrong username or password, or a disabled account (HTTP 401)."""


class UserError(ValueError):
    """A user cannot be created or changed; the message says what to change (HTTP 422)."""


class TooManyAttempts(Exception):
    """Too many failed sign-ins (HTTP 429); `retry_after_s` says when to try again."""

    def __init__(self, retry_after_s: float) -> None:
        self.retry_after_s = max(1, int(retry_after_s + 0.999))
        super().__init__(f"too many failed sign-ins; try again in {self.retry_after_s} s")


@dataclass(frozen=True)
class UserView:
    id: int
    username: str
    role: str
    disabled: bool
    created_at: Annotated[datetime | None, NOT_SERVED]
    #: False for `local` until it is given a password: it cannot sign in
    has_password: bool = True

    @property
    def is_admin(self) -> bool:
        return self.role == Role.admin.value


def user_view(u: User) -> UserView:
    return UserView(
        id=u.id,
        username=u.username,
        role=u.role.value,
        disabled=bool(u.disabled),
        created_at=u.created_at,
        has_password=u.password_hash is not None,
    )


# --- passwords -------------------------------------------------------------------------------------

_hasher = PasswordHasher()
#: verified against when the username does not exist, so that the answer takes as long
_DUMMY_HASH = _hasher.hash(secrets.token_urlsafe(16))


def check_password(password: object) -> str:
    if not isinstance(password, str):
        raise UserError("the password must be text")
    if len(password) < MIN_PASSWORD_CHARS:
        raise UserError(f"the password needs at least {MIN_PASSWORD_CHARS} characters")
    if len(password) > MAX_PASSWORD_CHARS:
        raise UserError(f"the password may have at most {MAX_PASSWORD_CHARS} characters")
    if "\x00" in password:
        raise UserError("the password must not contain NUL characters")
    return password


def hash_password(password: str) -> str:
    return _hasher.hash(check_password(password))


def verify_password(password_hash: str | None, password: str) -> bool:
    try:
        return _hasher.verify(password_hash or _DUMMY_HASH, password) and password_hash is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


# --- who acts --------------------------------------------------------------------------------------


def local_admin(session: Session) -> User:
    """The local admin `local` (migration 0007 creates it; created here if a database lacks it)."""
    u = session.scalar(select(User).where(User.username == LOCAL_USERNAME))
    if u is None:
        u = User(username=LOCAL_USERNAME, password_hash=None, role=Role.admin, disabled=False)
        session.add(u)
        session.flush()
    return u


def local_actor(settings: Settings) -> UserView:
    """The local admin, as the CLI (which runs on the server) and the embedded mode act."""
    with session_scope(settings.resolved_database_url) as s:
        return user_view(local_admin(s))


def resolve_actor(session: Session, settings: Settings, user: UserView | None) -> UserView:
    """The acting user: `user`, or when None the local admin in embedded mode; NotSignedIn in production."""
    if user is not None:
        return user
    if settings.mode == "production":
        raise NotSignedIn("sign in first")
    return user_view(local_admin(session))


def can_see(user: UserView | None, owner_id: int | None) -> bool:
    """May `user` see an object owned by `owner_id`? None: the system itself (runner, tests)."""
    return user is None or user.is_admin or owner_id == user.id


def require_admin(user: UserView | None) -> None:
    if user is not None and not user.is_admin:
        raise Forbidden("only an admin may do this")


# --- signing in ------------------------------------------------------------------------------------


class FailedSignIns:
    """Failed sign-ins per key (a username, a client address) in a sliding window, in this process's
    memory (the web app is one process)."""

    def __init__(self, limit: int = MAX_FAILURES, window_s: float = FAILURE_WINDOW_S) -> None:
        self.limit, self.window_s = limit, window_s
        self._fails: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def retry_after(self, keys: list[str], now: float | None = None) -> float | None:
        """Seconds until a key under the limit again, or None when every key may try now."""
        now = time.monotonic() if now is None else now
        wait = None
        with self._lock:
            for key in keys:
                q = self._fails.get(key)
                while q and now - q[0] >= self.window_s:
                    q.popleft()
                if q is not None and not q:
                    del self._fails[key]
                elif q and len(q) >= self.limit:
                    w = self.window_s - (now - q[0])
                    wait = w if wait is None else max(wait, w)
        return wait

    def failed(self, keys: list[str], now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            if len(self._fails) > 10_000:  # many names sprayed: drop the keys whose failures are all old
                self._fails = {k: q for k, q in self._fails.items() if q and now - q[-1] < self.window_s}
            for key in keys:
                self._fails.setdefault(key, deque()).append(now)

    def clear(self) -> None:
        with self._lock:
            self._fails.clear()

    def forget(self, key: str) -> None:
        with self._lock:
            self._fails.pop(key, None)


SIGN_INS = FailedSignIns()


def authenticate(settings: Settings, username: str, password: str, client: str = "?") -> UserView:
    """The user whose password this is; SignInFailed otherwise (the same message for an unknown user
    and a wrong password), TooManyAttempts after MAX_FAILURES failures within FAILURE_WINDOW_S for the
    username or the client."""
    username = (username or "").strip()
    keys = [f"user:{username.lower()}", f"client:{client}"]
    wait = SIGN_INS.retry_after(keys)
    if wait is not None:
        raise TooManyAttempts(wait)
    with session_scope(settings.resolved_database_url) as s:
        u = s.scalar(select(User).where(func.lower(User.username) == username.lower())) if username else None
        ok = verify_password(u.password_hash if u else None, password or "")
        view = user_view(u) if u else None
    if not ok or view is None:
        SIGN_INS.failed(keys)
        raise SignInFailed("wrong username or password")
    if view.disabled:
        raise SignInFailed("this account is disabled; ask an admin")
    SIGN_INS.forget(keys[0])
    return view


_PROCESS_SECRET = secrets.token_urlsafe(32)  # embedded mode without a key: valid in this process only


def _serializer(settings: Settings, purpose: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(settings.secret_key or _PROCESS_SECRET, salt=f"longread-{purpose}")


def _fingerprint(password_hash: str | None) -> str:
    # A changed password ends the sessions and tokens signed before it.
    return (password_hash or "")[-10:]


def issue_token(settings: Settings, user: UserView, purpose: str = "token") -> str:
    """A signed token naming the user (`purpose`: `token` for the API, `session` for the browser's
    cookie); it expires after TOKEN_TTL_S and when the password changes."""
    with session_scope(settings.resolved_database_url) as s:
        u = s.get(User, user.id)
        fp = _fingerprint(u.password_hash if u else None)
    return _serializer(settings, purpose).dumps({"uid": user.id, "pw": fp})


def user_for_token(settings: Settings, token: str | None, purpose: str = "token") -> UserView | None:
    """The user a valid, unexpired token names, if that user exists and is not disabled; else None."""
    if not token or len(token) > 4096:
        return None
    try:
        data = _serializer(settings, purpose).loads(token, max_age=settings.token_ttl_s)
    except (BadSignature, SignatureExpired, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("uid"), int):
        return None
    with session_scope(settings.resolved_database_url) as s:
        u = s.get(User, data["uid"])
        if u is None or u.disabled or _fingerprint(u.password_hash) != data.get("pw"):
            return None
        return user_view(u)


def active_user(settings: Settings, username: str | None) -> UserView | None:
    """The enabled user of that name (the UI's `request.username`), else None."""
    if not username:
        return None
    with session_scope(settings.resolved_database_url) as s:
        u = s.scalar(select(User).where(User.username == username))
        return user_view(u) if u is not None and not u.disabled else None


# --- managing users (admins) -----------------------------------------------------------------------


def _check_username(username: object) -> str:
    if not isinstance(username, str) or not USERNAME_RE.fullmatch(username.strip()):
        raise UserError("a username is 1 to 64 letters, digits or . _ @ - (starting with a letter or digit)")
    return username.strip()


def _check_role(role: object) -> Role:
    if role not in ROLES:
        raise UserError(f"role must be one of {', '.join(ROLES)} (got {role!r})")
    return Role(role)


def list_users(settings: Settings, user: UserView | None = None) -> list[UserView]:
    """Every user, by id (admins only)."""
    with session_scope(settings.resolved_database_url) as s:
        require_admin(resolve_actor(s, settings, user))
        return [user_view(u) for u in s.scalars(select(User).order_by(User.id))]


def add_user(
    settings: Settings, username: str, password: str, role: str = "reader", *, user: UserView | None = None
) -> UserView:
    """A new user (admins only); UserError if the name is taken or the password too short."""
    username, role_, password = _check_username(username), _check_role(role), check_password(password)
    with session_scope(settings.resolved_database_url) as s:
        require_admin(resolve_actor(s, settings, user))
        if s.scalar(select(User.id).where(func.lower(User.username) == username.lower())) is not None:
            raise UserError(f"a user named {username!r} exists already")
        u = User(username=username, password_hash=hash_password(password), role=role_, disabled=False)
        s.add(u)
        s.flush()
        return user_view(u)


def find_user(settings: Settings, username: str, *, user: UserView | None = None) -> UserView:
    """The user of that name (admins only); NotFound if none."""
    with session_scope(settings.resolved_database_url) as s:
        require_admin(resolve_actor(s, settings, user))
        u = s.scalar(select(User).where(User.username == (username or "").strip()))
        if u is None:
            raise NotFound(f"no user {username!r}")
        return user_view(u)


def update_user(
    settings: Settings,
    user_id: int,
    *,
    role: str | None = None,
    disabled: bool | None = None,
    password: str | None = None,
    user: UserView | None = None,
) -> UserView:
    """Change a user's role, disabled flag or password (admins only). The last enabled admin cannot be
    demoted or disabled (nobody could manage users any more)."""
    role_ = _check_role(role) if role is not None else None
    new_hash = hash_password(password) if password is not None else None
    with session_scope(settings.resolved_database_url) as s:
        require_admin(resolve_actor(s, settings, user))
        u = s.get(User, user_id) if isinstance(user_id, int) and 0 < user_id < 2**63 else None
        if u is None:
            raise NotFound(f"no user {user_id}")
        losing_admin = u.role == Role.admin and not u.disabled and (role_ == Role.reader or disabled is True)
        if losing_admin:
            admins = s.scalar(select(func.count(User.id)).where(User.role == Role.admin, User.disabled.is_(False)))
            if admins <= 1:
                raise UserError(f"{u.username} is the last admin: make another admin first")
        if role_ is not None:
            u.role = role_
        if disabled is not None:
            u.disabled = bool(disabled)
        if new_hash is not None:
            u.password_hash = new_hash
        s.flush()
        return user_view(u)
