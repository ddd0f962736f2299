"""The Models tab: the model versions with their lineage, and switching the active one (back to the base
included)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from app.db import session_scope
from app.services import registry
from app.services.models import activate_version, version_label
from app.settings import Settings
from app.ui.admin_context import REFUSED, Admin
from app.ui.tables import table
from app.ui.text import text_md
from app.ui.training_views import ANSWERS_RIGHT, base_label, set_label

MODEL_COLUMNS = [
    "#",
    "Version",
    "Active",
    "Lineage",
    "Answers right on held-out sets (gold in answer)",
    "Weights (engine)",
    "Created (UTC)",
]


def model_rows(settings: Settings, versions: list[dict[str, Any]]) -> list[list[object]]:
    """The registry: the base first (active when no version is), then every version, by its label
    (version_label); the lineage keeps the stored names, as the API and `longread models` give them."""
    none_active = not any(v["active"] for v in versions)
    rows: list[list[object]] = [
        [
            0,
            base_label(settings),
            "● active" if none_active else "",
            "the settings' model (LONGREAD_MODEL)",
            "",
            f"{settings.model} ({settings.engine})",
            "",
        ]
    ]
    for v in versions:
        metrics = "; ".join(f"{set_label(k)}: {x:.0%}" for k, x in v["key_metrics"].items())
        weights = (f"{v['base_model']} + LoRA adapter" if v["adapter_path"] else v["base_model"]) + (
            f" ({v['engine']})" if v["engine"] else ""
        )
        rows.append(
            [
                v["id"],
                version_label(v["name"]),
                "● active" if v["active"] else "",
                " → ".join(v["lineage"]),
                metrics,
                weights,
                v["created_at"][:16].replace("T", " "),
            ]
        )
    return rows


@dataclass(eq=False)  # eq=False: hashable, as Gradio needs its handlers (these bound methods) to be
class ModelsPage:
    admin: Admin
    table: gr.Dataframe
    pick_version: gr.Dropdown
    activate: gr.Button
    msg: gr.Markdown

    @property
    def view(self) -> list[gr.components.Component]:
        """What `show` fills."""
        return [self.table, self.pick_version, self.msg]

    def show(self, note: str = "", keep_pick: bool = False) -> dict:
        """The versions, the menu of them (emptied, unless `keep_pick`) and the message line."""
        settings = self.admin.settings
        try:
            versions = registry.registry(settings, user=self.admin.me())
        except REFUSED as exc:
            return {self.table: [], self.msg: f"**Cannot list the model versions:** {text_md(exc)}"}
        choices = [(base_label(settings), 0)] + [(f"#{v['id']} {version_label(v['name'])}", v["id"]) for v in versions]
        return {
            self.table: model_rows(settings, versions),
            self.pick_version: gr.update(choices=choices) if keep_pick else gr.update(choices=choices, value=None),
            self.msg: note,
        }

    def on_select(self) -> dict:
        """The tab opened: the versions as they are now, and a version already picked stays picked (on a busy
        machine this refresh landed after a quick pick and emptied it: "choose a version first")."""
        return self.show(keep_pick=True)

    def table_now(self) -> dict:
        """The versions' table alone, as it is now (after a run was promoted)."""
        return {self.table: self.show()[self.table]}

    def on_activate(self, version_id: int | None) -> dict:
        if version_id is None:
            return self.show("**Cannot switch:** choose a version (or the base) first.")
        settings = self.admin.settings
        try:
            with session_scope(settings.resolved_database_url) as s:
                v = activate_version(s, int(version_id), user=self.admin.me())
                name = v.name if v else None
        except REFUSED as exc:
            return self.show(f"**Cannot switch:** {text_md(exc)}")
        now = (
            f"version #{int(version_id)} {text_md(version_label(name))}"
            if name
            else f"the base model {text_md(version_label(settings.model))}"
        )
        return self.show(f"New readings now use {now}; readings in flight finish on the version they began with.")

    def connect(self, tab: gr.Tab) -> None:
        tab.select(self.on_select, None, self.view, show_progress="hidden")
        self.activate.click(self.on_activate, self.pick_version, self.view, show_progress="hidden")


def build_models_page(admin: Admin) -> ModelsPage:
    """The page's components, in the current layout context (the Models tab)."""
    gr.Markdown(
        "### Model versions\nThe active version reads new questions; readings in flight finish on the "
        "version they began with. Lineage: the base, then each run and the version it was promoted to, by the "
        f"names the API and `longread models` use. {ANSWERS_RIGHT} The sets: planted facts in documents of "
        "2K tokens and longer, contract categories, contract clauses whose answer is Yes or No, questions on "
        "books."
    )
    versions = table(MODEL_COLUMNS, "models-table", column_widths=["5%", "17%", "8%", "30%", "15%", "15%", "10%"])
    with gr.Row():
        pick_version = gr.Dropdown(label="Version", choices=[], value=None, elem_id="pick-version")
        activate = gr.Button("Activate", variant="primary", scale=0, min_width=160, elem_id="activate-version")
    msg = gr.Markdown(elem_id="models-msg", latex_delimiters=[])
    return ModelsPage(admin, versions, pick_version, activate, msg)
