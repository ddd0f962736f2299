"""The one place that decides a reading's chunk, memory and answer sizes, its template set and its memory policy:
what the request asks for, else the model version's (the sizes it was trained for), else the settings'; the memory
policy is the model version's alone. Readings (API, browser, CLI), the reading estimate, training runs' starting
points and evaluations all ask here."""

from __future__ import annotations

from app.db import session_scope
from app.models import ModelVersion
from app.services.models import active_version
from app.settings import Settings
from inference.agent import AgentConfig


def reading_config(
    settings: Settings,
    version: ModelVersion | None,
    chunk_tokens: int | None = None,
    memory_tokens: int | None = None,
    *,
    answer_tokens: int | None = None,
    template_set: str | None = None,
) -> AgentConfig:
    """The sizes and template a new reading gets: those asked for, else the model version's (None: the
    settings' model; a version's size left None is the settings'), else the settings'. A version has no answer
    size of its own. AgentConfig validates the template set."""
    return AgentConfig(
        chunk_tokens=chunk_tokens or (version and version.chunk_tokens) or settings.chunk_tokens,
        memory_tokens=memory_tokens or (version and version.memory_tokens) or settings.memory_tokens,
        answer_tokens=answer_tokens or settings.answer_tokens,
        template_set=template_set or (version.template_set if version else settings.template_set),
        memory_policy=(version.memory_policy if version else None) or "generative",
    )


def default_reading_config(settings: Settings) -> AgentConfig:
    """What a reading that asks for nothing gets now, under the active version (the Read tab's placeholders)."""
    with session_scope(settings.resolved_database_url) as s:
        return reading_config(settings, active_version(s))
