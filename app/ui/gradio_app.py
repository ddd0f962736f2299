"""Upload a document, ask a question, watch the agent read (chunk k of K, its current memory),
get the answer. Each action calls the same service function the API and the CLI call (it validates,
commits and enqueues); the UI only shows the views they return.

Every service call passes the signed-in user (`me()`: Gradio's `gr.Request.username`, which the app's
auth_dependency sets, app/api/auth.py), so the services' ownership checks hold for the UI too. Admins
also get the Training and Models tabs (app/ui/training_ui.py) and the Admin tab with the Users panel (list, add,
change role, disable), hidden for readers.

This module builds the page's header (account, model status and the model version that reads) and puts the tabs
together: the Read tab (app/ui/read_tab.py), then the admins' tabs (the Users panel: app/ui/users_panel.py)."""

from __future__ import annotations

import html

import gradio as gr
from gradio.context import LocalContext

from app.db import session_scope
from app.services import health, models, users
from app.services.users import UserView
from app.settings import Settings
from app.ui.read_tab import build_read_tab
from app.ui.read_views import describe_health
from app.ui.ticks import Ticks
from app.ui.training_ui import build_admin_tabs
from app.ui.users_panel import build_users_panel


def account_line(settings: Settings, who: UserView | None) -> str:
    """Who is signed in, and a sign-out button (production); the local admin in embedded mode."""
    if who is None:
        return ""
    if settings.mode == "production":
        line = (
            f'Signed in as <b id="account-name">{html.escape(who.username)}</b> ({html.escape(who.role)})'
            '<form method="post" action="/logout" class="lr-signout">'
            '<button type="submit" id="sign-out">Sign out</button></form>'
        )
    else:
        line = (
            f'Acting as the local admin <b id="account-name">{html.escape(who.username)}</b> '
            "(embedded mode: no sign-in)"
        )
    return f'<div class="lr-account">{line}</div>'


def build_ui(settings: Settings) -> gr.Blocks:
    url = settings.resolved_database_url

    def me() -> UserView | None:
        """The user of the event being handled (gr.Request.username, set by the app's auth_dependency).
        None when there is none: the services then act as the local admin in embedded mode and refuse
        in production."""
        request = LocalContext.request.get(None)
        return users.active_user(settings, getattr(request, "username", None))

    def on_health():
        with session_scope(url) as s:
            h = health.health(s)
            version = models.active_version(s)
            label = models.version_label(version.name if version else settings.model)
            which = f"version #{version.id}" if version else "the configured model (no version is active)"
            model = f"{label}, {which}"
        failed = h.engine_state == "failed"
        return describe_health(h, model), gr.update(value=h.detail if failed else "", visible=failed)

    def on_account() -> dict:
        """The header's account line (who is signed in, a sign-out button) and, for admins, the Training,
        Models and Admin tabs."""
        who = me()
        admin = who is not None and who.is_admin
        shown = {part: gr.update(visible=admin) for part in admin_parts}
        users = dict(zip(users_panel.outputs, users_panel.view("" if admin else None), strict=True))
        return {account: account_line(settings, who)} | shown | users

    with gr.Blocks(title="Longread") as ui:
        with gr.Row(equal_height=True):
            gr.Markdown(
                "# Longread\nAsk questions of a whole book or contract. "
                "A memory agent reads every page, chunk by chunk, and answers from its notes."
            )
            account = gr.HTML(elem_id="account")
        health_line = gr.Markdown(elem_id="health", latex_delimiters=[])
        engine_log = gr.Textbox(
            label="The model's log (last lines)",
            lines=8,
            max_lines=20,
            interactive=False,
            visible=False,
            elem_id="engine-log",
        )
        with gr.Tabs(elem_id="pages"):
            with gr.Tab("Read", id="read", elem_id="read-tab"):
                connect_read_tab = build_read_tab(settings, me)
            admin_tabs = build_admin_tabs(settings, me)
            with gr.Tab("Admin", id="admin", elem_id="admin-tab", visible=False) as admin_tab:
                users_panel = build_users_panel(settings, me)
        # The document and reading open in this browser, restored after a reload.
        saved = gr.BrowserState({"document": None, "reading": None}, storage_key="longread-view")
        timer = Ticks(gr.Timer(1.0, active=False))  # while the open reading reads
        list_timer = Ticks(gr.Timer(3.0))

        connect_read_tab(ui, saved, timer, list_timer)
        list_timer.tick(on_health, None, [health_line, engine_log], show_progress="hidden")
        timer.wire()
        list_timer.wire()
        ui.load(on_health, None, [health_line, engine_log], show_progress="hidden")
        admin_parts = [admin_tab, users_panel.box, admin_tabs.training, admin_tabs.models]  # hidden for readers
        ui.load(on_account, None, [account, *admin_parts, *users_panel.outputs], show_progress="hidden")
    return ui
