"""The Users panel (admins only, hidden for readers; the services refuse a reader's calls all the same):
list, add, change role, disable, enable."""

from __future__ import annotations

from collections.abc import Callable

import gradio as gr

from app.services import users
from app.services.errors import NotFound
from app.services.users import UserView
from app.settings import Settings
from app.ui.text import text_md


class UsersPanel:
    """The panel's box (shown to admins), its outputs and `view(note)`, which fills them."""

    def __init__(self, box: gr.Accordion, outputs: list, view: Callable[[str | None], tuple]) -> None:
        self.box, self.outputs, self.view = box, outputs, view


def build_users_panel(settings: Settings, me: Callable[[], UserView | None]) -> UsersPanel:
    def admin_view(note: str | None):
        """The Users panel's table, user menu and message; nothing for a non-admin (note None)."""
        if note is None:
            return [], gr.update(choices=[], value=None), ""
        listed = users.list_users(settings, me())
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
        return rows, gr.update(choices=[(u.username, u.id) for u in listed], value=None), note

    def _admin_act(action: Callable[[], users.UserView], done: str):
        try:
            changed = action()
        except (NotFound, ValueError, PermissionError) as exc:  # UserError is a ValueError, Forbidden a PermissionError
            who = me()
            return *admin_view(f"**Cannot do that:** {text_md(exc)}" if who and who.is_admin else None), gr.update()
        return *admin_view(done.format(name=text_md(changed.username), role=text_md(changed.role))), ""

    def on_add_user(name: str, password: str, role: str | None):
        return _admin_act(
            lambda: users.add_user(settings, (name or "").strip(), password or "", role or "reader", user=me()),
            "Added {name} ({role}).",
        )

    def on_set_role(user_id: int | None, role: str | None):
        if user_id is None or role is None:
            return *admin_view("**Cannot change the role:** choose a user and a role."), gr.update()
        return _admin_act(
            lambda: users.update_user(settings, int(user_id), role=role, user=me()), "{name} is now {role}."
        )

    def on_disable(user_id: int | None, disabled: bool):
        if user_id is None:
            return *admin_view("**Choose a user first.**"), gr.update()
        return _admin_act(
            lambda: users.update_user(settings, int(user_id), disabled=disabled, user=me()),
            "{name} is "
            + (
                "disabled: they cannot sign in, and their sessions and tokens stop working."
                if disabled
                else "enabled again."
            ),
        )

    # Admins only (hidden for readers; the services refuse a reader's calls all the same).
    with gr.Accordion(
        "Users (admins only): add, change role, disable", open=True, visible=False, elem_id="admin-users"
    ) as admin_box:
        users_table = gr.Dataframe(
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
            add_user = gr.Button("Add user", elem_id="add-user")
        with gr.Row():
            pick_user = gr.Dropdown(label="User", choices=[], value=None, elem_id="pick-user")
            pick_role = gr.Radio(["reader", "admin"], label="Role", elem_id="pick-role")
            change_role = gr.Button("Change role", size="sm", elem_id="change-role")
            disable_user = gr.Button("Disable", size="sm", elem_id="disable-user")
            enable_user = gr.Button("Enable", size="sm", elem_id="enable-user")
        users_msg = gr.Markdown(elem_id="users-msg", latex_delimiters=[])
    admin_outputs = [users_table, pick_user, users_msg]
    add_user.click(
        on_add_user, [new_name, new_password, new_role], [*admin_outputs, new_password], show_progress="hidden"
    )
    change_role.click(on_set_role, [pick_user, pick_role], [*admin_outputs, new_password], show_progress="hidden")
    disable_user.click(lambda u: on_disable(u, True), pick_user, [*admin_outputs, new_password], show_progress="hidden")
    enable_user.click(lambda u: on_disable(u, False), pick_user, [*admin_outputs, new_password], show_progress="hidden")
    return UsersPanel(admin_box, admin_outputs, admin_view)
