"""The Users panel (admins only, hidden for readers; the services refuse a reader's calls all the same):
list, add, change role, disable, enable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import gradio as gr

from app.services import users
from app.services.errors import NotFound
from app.services.users import UserView
from app.settings import Settings
from app.ui.text import text_md


class Listed(NamedTuple):
    """What `UsersPanel.view` fills, by name: the panel's components, or the values an event sends them
    (one order for both, so no output is counted by hand)."""

    table: Any
    pick_user: Any
    msg: Any


@dataclass(eq=False)  # eq=False: hashable, as Gradio needs its handlers (these bound methods) to be
class UsersPanel:
    """The panel's box (shown to admins), its outputs and `view(note)`, which fills them."""

    settings: Settings
    me: Callable[[], UserView | None]
    box: gr.Accordion
    listed: Listed
    new_name: gr.Textbox
    new_password: gr.Textbox
    new_role: gr.Radio
    pick_role: gr.Radio
    buttons: dict[str, gr.Button]  #: add, change-role, disable, enable

    @property
    def outputs(self) -> list[gr.components.Component]:
        return list(self.listed)

    def view(self, note: str | None) -> Listed:
        """The table, the user menu and the message; nothing for a non-admin (note None)."""
        if note is None:
            return Listed([], gr.update(choices=[], value=None), "")
        listed = users.list_users(self.settings, self.me())
        rows = [
            [
                u.id,
                u.username,
                u.role,
                "disabled" if u.disabled else "active",
                "yes" if u.has_password else "no (cannot sign in)",
                f"{u.created_at:%Y-%m-%d %H:%M}" if u.created_at else "",
            ]
            for u in listed
        ]
        return Listed(rows, gr.update(choices=[(u.username, u.id) for u in listed], value=None), note)

    def _shown(self, note: str | None, password: Any) -> dict:
        return {**dict(zip(self.listed, self.view(note), strict=True)), self.new_password: password}

    def _act(self, action: Callable[[], users.UserView], done: str) -> dict:
        """Do it; the list as it is then, and the new password box emptied (left as it was on a refusal)."""
        try:
            changed = action()
        except (NotFound, ValueError, PermissionError) as exc:  # UserError is a ValueError, Forbidden a PermissionError
            who = self.me()
            return self._shown(f"**Cannot do that:** {text_md(exc)}" if who and who.is_admin else None, gr.update())
        return self._shown(done.format(name=text_md(changed.username), role=text_md(changed.role)), "")

    def on_add_user(self, name: str, password: str, role: str | None) -> dict:
        return self._act(
            lambda: users.add_user(
                self.settings, (name or "").strip(), password or "", role or "reader", user=self.me()
            ),
            "Added {name} ({role}).",
        )

    def on_set_role(self, user_id: int | None, role: str | None) -> dict:
        if user_id is None or role is None:
            return self._shown("**Cannot change the role:** choose a user and a role.", gr.update())
        return self._act(
            lambda: users.update_user(self.settings, int(user_id), role=role, user=self.me()), "{name} is now {role}."
        )

    def on_disable(self, user_id: int | None) -> dict:
        return self._set_disabled(user_id, True)

    def on_enable(self, user_id: int | None) -> dict:
        return self._set_disabled(user_id, False)

    def _set_disabled(self, user_id: int | None, disabled: bool) -> dict:
        if user_id is None:
            return self._shown("**Choose a user first.**", gr.update())
        done = (
            "disabled: they cannot sign in, and their sessions and tokens stop working."
            if disabled
            else "enabled again."
        )
        return self._act(
            lambda: users.update_user(self.settings, int(user_id), disabled=disabled, user=self.me()),
            "{name} is " + done,
        )

    def connect(self) -> None:
        out, pick_user = [*self.listed, self.new_password], self.listed.pick_user
        self.buttons["add"].click(
            self.on_add_user, [self.new_name, self.new_password, self.new_role], out, show_progress="hidden"
        )
        self.buttons["change-role"].click(self.on_set_role, [pick_user, self.pick_role], out, show_progress="hidden")
        self.buttons["disable"].click(self.on_disable, pick_user, out, show_progress="hidden")
        self.buttons["enable"].click(self.on_enable, pick_user, out, show_progress="hidden")


def build_users_panel(settings: Settings, me: Callable[[], UserView | None]) -> UsersPanel:
    """The panel, hidden (on_account shows it to admins), in the current layout context; its events wired."""
    with gr.Accordion(
        "Users (admins only): add, change role, disable", open=True, visible=False, elem_id="admin-users"
    ) as box:
        table = gr.Dataframe(
            value=[],
            headers=["#", "Username", "Role", "State", "Password set", "Created (UTC)"],
            type="array",
            interactive=False,
            elem_id="users-table",
        )
        with gr.Row():
            new_name = gr.Textbox(label="New user's name", elem_id="new-username")
            new_password = gr.Textbox(
                label="Their password (at least 8 characters)", type="password", elem_id="new-password"
            )
            new_role = gr.Radio(["reader", "admin"], value="reader", label="Role", elem_id="new-role")
            add = gr.Button("Add user", elem_id="add-user")
        with gr.Row():
            pick_user = gr.Dropdown(label="User", choices=[], value=None, elem_id="pick-user")
            pick_role = gr.Radio(["reader", "admin"], label="Role", elem_id="pick-role")
            change_role = gr.Button("Change role", size="sm", elem_id="change-role")
            disable = gr.Button("Disable", size="sm", elem_id="disable-user")
            enable = gr.Button("Enable", size="sm", elem_id="enable-user")
        msg = gr.Markdown(elem_id="users-msg", latex_delimiters=[])
    buttons = {"add": add, "change-role": change_role, "disable": disable, "enable": enable}
    panel = UsersPanel(
        settings, me, box, Listed(table, pick_user, msg), new_name, new_password, new_role, pick_role, buttons
    )
    panel.connect()
    return panel
