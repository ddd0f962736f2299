"""A run's TrainConfig: the `small` preset, then the version it starts from, then the form's values; its
reading sizes and template are the start version's alone."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from sqlalchemy.orm import Session

from app.models import ModelVersion
from app.services.errors import NotFound, valid_id
from app.services.models import active_version
from app.services.reading_config import reading_config
from app.services.training_runs.shared import (
    DataSelection,
    RunError,
    RunParams,
    curriculum,
)
from app.settings import Settings
from inference.models import weights_of
from training.config import ConfigError, TrainConfig, make_config


def start_point(s: Session, settings: Settings, start_version_id: int | None) -> tuple[ModelVersion | None, dict]:
    """The version a run trains from (the given one, else the active one; None: the settings' model) and
    the config fields it sets: its base model, its adapter as the starting point, its reading sizes."""
    if start_version_id is not None:
        version = s.get(ModelVersion, start_version_id) if valid_id(start_version_id) else None
        if version is None:
            raise NotFound(f"no model version {start_version_id}")
    else:
        version = active_version(s)
    model, implied = weights_of(version.base_model if version else settings.model)
    adapter = (version and version.adapter_path) or (str(implied) if implied else None)
    sizes = reading_config(settings, version)  # what a reading with it gets: the run trains for that
    return version, {
        "model": model,
        "init_adapter": adapter,
        "template_set": sizes.template_set,
        "chunk_tokens": sizes.chunk_tokens,
        "memory_tokens": sizes.memory_tokens,
        "answer_tokens": sizes.answer_tokens,
        "memory_policy": sizes.memory_policy,
    }


#: what `reading_config` decides for the start version: a run keeps them, whatever the form says (its memory policy
#: too: a run from the extractive reader teaches the answer step on the memories its capture keeps)
READING = ("template_set", "chunk_tokens", "memory_tokens", "answer_tokens", "memory_policy")


def run_config(selection: DataSelection, params: RunParams, start: dict, feedback: list[Path]) -> TrainConfig:
    """The `small` preset, then the start version's fields, then the form's; RunError lists what to fix.
    `params.extra` may set any other field, and other data fields under "data", but not the reading sizes
    and template (READING): a version is read at the sizes it was trained for and a promoted run records
    its own, so a run trains at its start version's (the form has none to offer). Other sizes: a version
    registered with them (`longread models add`), or a config file (`longread train CONFIG --queue`)."""
    extra = {k: v for k, v in params.extra.items() if k not in READING}
    data = {
        **extra.pop("data", {}),
        "synthetic_kinds": list(selection.synthetic_kinds),
        "curriculum": [(min(selection.lengths), 1)],
        "contracts": selection.contracts,
        "qa_files": [str(p) for p in selection.qa_files],
        "feedback": [str(p) for p in feedback],
    }
    chosen = {f.name: getattr(params, f.name) for f in dataclasses.fields(params) if f.name != "extra"}
    try:
        config = make_config({"preset": "small", **start, **chosen, **extra, "data": data}, where="the run's settings")
    except ConfigError as exc:
        raise RunError(str(exc)) from None
    config.data.curriculum = curriculum(tuple(selection.lengths), config.sft_steps + config.rl_steps)
    return config
