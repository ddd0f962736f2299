"""Who a request comes from, and the gate in front of the whole app.

- API clients: `POST /api/auth/token` (OAuth2 password flow) gives a signed bearer token
  (`Authorization: Bearer …`), valid for TOKEN_TTL_S, void once the user is disabled or changes
  password.
- Browsers: the sign-in page (`GET`/`POST /login`) sets a signed session cookie (HttpOnly,
  SameSite=Lax); `POST /logout` clears it.
- `AuthGate` (pure ASGI middleware, in front of the API and the Gradio UI): in production every path
  but the sign-in page, /healthz, /api/auth/token and /app-static answers 401 without a valid session or
  token, and a browser opening a page is sent to the sign-in page instead. In both modes, a
  state-changing request (POST, PUT, PATCH, DELETE) that is not bearer-authenticated must come from
  this origin (Origin, else Referer, matching Host): CSRF is refused with 403, on top of SameSite.
- Embedded mode: no sign-in; a request without credentials acts as the local admin `local`.

The user is resolved once per request and kept in `request.state.user`; the services enforce what
that user may see (app/services/users.py).
"""

from __future__ import annotations

import html
import json
from typing import Annotated
from urllib.parse import quote, urlsplit

from fastapi import APIRouter, Depends, Form, Request, status
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.security import OAuth2PasswordBearer, OAuth2PasswordRequestForm
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import cookie_parser

from app.services import users
from app.services.users import NotSignedIn, SignInFailed, TooManyAttempts, UserView
from app.settings import Settings

SESSION_COOKIE = "longread_session"
SAFE_METHODS = {"GET", "HEAD", "OPTIONS", "TRACE"}
#: paths open without signing in (production): the sign-in page, health, the token endpoint, our CSS
PUBLIC_PATHS = {"/login", "/logout", "/healthz", "/api/auth/token", "/favicon.ico"}
PUBLIC_PREFIXES = ("/app-static/",)


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def _bearer(headers: Headers) -> str | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _session_cookie(headers: Headers) -> str | None:
    return cookie_parser(headers.get("cookie", "")).get(SESSION_COOKIE)


def resolve_user(settings: Settings, headers: Headers) -> UserView | None:
    """The user a bearer token or the session cookie names (valid, unexpired, not disabled); in
    embedded mode the local admin when there is neither; else None."""
    token = _bearer(headers)
    if token is not None:
        return users.user_for_token(settings, token, "token")
    cookie = _session_cookie(headers)
    if cookie:
        found = users.user_for_token(settings, cookie, "session")
        if found is not None or settings.mode == "production":
            return found
    return users.local_actor(settings) if settings.mode == "embedded" else None


def same_origin(headers: Headers) -> bool | None:
    """Whether the request's Origin (else Referer) is this host; None when it names neither."""
    source = headers.get("origin") or headers.get("referer")
    if not source:
        return None
    if source == "null":
        return False
    host = headers.get("x-forwarded-host") or headers.get("host") or ""
    return urlsplit(source).netloc.lower() == host.split(",")[0].strip().lower()


class AuthGate:
    """Pure ASGI middleware (server-sent events and uploads pass through untouched)."""

    def __init__(self, app, settings: Settings) -> None:
        self.app, self.settings = app, settings

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        path, method = scope.get("path", "/"), scope.get("method", "GET")
        production = self.settings.mode == "production"
        if scope["type"] == "http" and method not in SAFE_METHODS and _bearer(headers) is None:
            origin_ok = same_origin(headers)
            with_cookie = _session_cookie(headers) is not None
            # A cookie-carrying (or sign-in) request must prove it comes from our own pages; without a
            # cookie nothing rides on the browser's credentials, except in embedded mode, where a page
            # of another site must not drive the local app either.
            refuse = origin_ok is False or (origin_ok is None and production and (with_cookie or path == "/login"))
            if refuse:
                return await _respond(
                    send,
                    403,
                    {
                        "detail": "cross-origin request refused: a form or script "
                        "of another site cannot act with your session"
                    },
                )
        state = scope.setdefault("state", {})
        state["lr_settings"] = self.settings  # for the mounted Gradio app, whose app.state has none
        if production and not is_public(path):
            user = await run_in_threadpool(resolve_user, self.settings, headers)
            if user is None:
                if scope["type"] == "websocket":
                    return await send({"type": "websocket.close", "code": 4401})
                accept = headers.get("accept", "")
                if method == "GET" and "text/html" in accept and not path.startswith(("/api/", "/gradio_api/")):
                    target = path + (
                        ("?" + scope["query_string"].decode("latin-1")) if scope.get("query_string") else ""
                    )
                    return await _redirect(send, "/login?next=" + quote(target, safe=""))
                return await _respond(
                    send,
                    401,
                    {"detail": "sign in first: POST /api/auth/token for a bearer token, or open /login"},
                    {"www-authenticate": "Bearer"},
                )
            state["user"] = user
        await self.app(scope, receive, send)


async def _respond(send, code: int, body: dict, extra: dict[str, str] | None = None) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": code, "headers": headers})
    await send({"type": "http.response.body", "body": data})


async def _redirect(send, location: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", location.encode()), (b"content-length", b"0")],
        }
    )
    await send({"type": "http.response.body", "body": b""})


def request_user(request: Request) -> UserView | None:
    """The request's user (resolved once, kept in request.state)."""
    cached = getattr(request.state, "user", None)
    if cached is not None:
        return cached
    settings = getattr(request.state, "lr_settings", None) or request.app.state.settings
    user = resolve_user(settings, request.headers)
    request.state.user = user
    return user


def gradio_username(request: Request) -> str | None:
    """Gradio's auth_dependency: the signed-in user's name, or None (Gradio then answers 401)."""
    user = request_user(request)
    return user.username if user is not None else None


#: declares the bearer scheme in the OpenAPI spec (/docs gets an Authorize button); the token itself is
#: read by resolve_user, which also accepts the session cookie
oauth2_scheme = OAuth2PasswordBearer(tokenUrl="/api/auth/token", auto_error=False)


def current_user(request: Request, _token: Annotated[str | None, Depends(oauth2_scheme)] = None) -> UserView:
    user = request_user(request)
    if user is None:
        raise NotSignedIn("sign in first: POST /api/auth/token for a bearer token, or open /login")
    return user


def current_admin(user: Annotated[UserView, Depends(current_user)]) -> UserView:
    users.require_admin(user)
    return user


UserDep = Annotated[UserView, Depends(current_user)]
AdminDep = Annotated[UserView, Depends(current_admin)]


def client_of(request: Request) -> str:
    return request.client.host if request.client else "?"


# --- API routes ------------------------------------------------------------------------------------

router = APIRouter(prefix="/api")


class TokenOut(BaseModel):
    access_token: str
    token_type: str = "bearer"
    expires_in: int = Field(description="seconds the token stays valid")


class UserIn(BaseModel):
    username: str = Field(min_length=1, max_length=64)
    password: str = Field(min_length=users.MIN_PASSWORD_CHARS, max_length=users.MAX_PASSWORD_CHARS)
    role: str = Field("reader", pattern="^(reader|admin)$")


class UserPatch(BaseModel):
    role: str | None = Field(None, pattern="^(reader|admin)$")
    disabled: bool | None = None
    password: str | None = Field(None, min_length=users.MIN_PASSWORD_CHARS, max_length=users.MAX_PASSWORD_CHARS)


@router.post(
    "/auth/token",
    responses={
        401: {"description": "Wrong username or password, or a disabled account"},
        429: {"description": "Too many failed sign-ins; Retry-After says when"},
    },
)
def issue_token(form: Annotated[OAuth2PasswordRequestForm, Depends()], request: Request) -> TokenOut:
    """OAuth2 password flow: form fields `username` and `password`; answers a bearer token."""
    settings: Settings = request.app.state.settings
    user = users.authenticate(settings, form.username, form.password, client_of(request))
    return TokenOut(access_token=users.issue_token(settings, user, "token"), expires_in=settings.token_ttl_s)


@router.get("/auth/me")
def me(user: UserDep) -> UserView:
    """Who this request acts as."""
    return user


@router.get("/users")
def list_users(request: Request, admin: AdminDep) -> list[UserView]:
    """Every user (admins only)."""
    return users.list_users(request.app.state.settings, admin)


@router.post("/users", status_code=status.HTTP_201_CREATED)
def add_user(body: UserIn, request: Request, admin: AdminDep) -> UserView:
    """A new user (admins only)."""
    return users.add_user(request.app.state.settings, body.username, body.password, body.role, user=admin)


@router.patch("/users/{user_id}")
def update_user(user_id: int, body: UserPatch, request: Request, admin: AdminDep) -> UserView:
    """Change a user's role, disabled flag or password (admins only)."""
    return users.update_user(
        request.app.state.settings, user_id, role=body.role, disabled=body.disabled, password=body.password, user=admin
    )


# --- the sign-in page ------------------------------------------------------------------------------

pages = APIRouter(include_in_schema=False)


def _page(title: str, body: str, code: int = 200) -> HTMLResponse:
    return HTMLResponse(
        f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)} · Longread</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/app-static/longread.css"></head>
<body class="lr-signin"><main class="lr-signin-box"><h1>Longread</h1>{body}</main></body></html>""",
        status_code=code,
        headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"},
    )


def _safe_next(target: str | None) -> str:
    """Only a path of this site (never `//evil.example` or a full URL): no open redirect."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def _form(next_url: str, message: str = "", username: str = "") -> str:
    note = f'<p class="lr-signin-error" role="alert" id="signin-error">{html.escape(message)}</p>' if message else ""
    return (
        f'{note}<form method="post" action="/login" id="signin-form">'
        f'<input type="hidden" name="next" value="{html.escape(next_url)}">'
        f'<label>Username <input name="username" id="username" autocomplete="username" required '
        f'value="{html.escape(username)}" autofocus></label>'
        f'<label>Password <input name="password" id="password" type="password" '
        f'autocomplete="current-password" required></label>'
        f'<button type="submit" id="sign-in">Sign in</button></form>'
    )


@pages.get("/login")
def login_page(request: Request, next: str = "/") -> HTMLResponse:
    return _page("Sign in", _form(_safe_next(next)))


@pages.post("/login", response_model=None)
def login(
    request: Request,
    username: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "/",
) -> HTMLResponse | RedirectResponse:
    settings: Settings = request.app.state.settings
    target = _safe_next(next)
    try:
        user = users.authenticate(settings, username, password, client_of(request))
    except TooManyAttempts as exc:
        return _page("Sign in", _form(target, str(exc), username), 429)
    except SignInFailed as exc:
        return _page("Sign in", _form(target, str(exc), username), 401)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        users.issue_token(settings, user, "session"),
        max_age=settings.token_ttl_s,
        httponly=True,
        samesite="lax",
        secure=settings.secure_cookies,
        path="/",
    )
    return response


@pages.get("/logout")
def logout_page() -> HTMLResponse:
    return _page(
        "Sign out", '<form method="post" action="/logout"><button type="submit" id="sign-out">Sign out</button></form>'
    )


@pages.post("/logout")
def logout() -> RedirectResponse:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax")
    return response


def add_error_handlers(api) -> None:
    from fastapi.responses import JSONResponse

    async def too_many(_req: Request, exc: TooManyAttempts) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=429, headers={"Retry-After": str(exc.retry_after_s)})

    async def unauthorized(_req: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=401, headers={"WWW-Authenticate": "Bearer"})

    api.add_exception_handler(TooManyAttempts, too_many)
    api.add_exception_handler(NotSignedIn, unauthorized)
    api.add_exception_handler(SignInFailed, unauthorized)
