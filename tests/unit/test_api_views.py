"""One definition of each answer: the API serves the services' views (dataclasses) as they are, so no pydantic
model of app/api repeats a view's fields (a new field would have to be added twice)."""

from __future__ import annotations

import dataclasses
import sys

from pydantic import BaseModel

import app.web  # noqa: F401  (loads every API module and the services they use)


def _classes(prefix: str) -> list[type]:
    return [
        c
        for name, m in list(sys.modules.items())
        if name.startswith(prefix)
        for c in vars(m).values()
        if isinstance(c, type) and c.__module__ == name
    ]


def test_no_api_model_repeats_a_service_view():
    views = {
        v: {f.name for f in dataclasses.fields(v)} for v in _classes("app.services.") if dataclasses.is_dataclass(v)
    }
    models = [m for m in _classes("app.api.") if issubclass(m, BaseModel)]
    assert views and models
    # five fields or more, all of one view's: a copy (fewer may reshape a view, as DataOverviewOut does)
    copies = [
        (m.__name__, v.__name__)
        for m in models
        for v, names in views.items()
        if len(m.model_fields) >= 5 and set(m.model_fields) <= names
    ]
    assert copies == []
