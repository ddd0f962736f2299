"""The reading-time estimate is for the engine that serves the model version a new reading gets."""

from __future__ import annotations

from app.models import ModelVersion
from app.services.documents import ENGINE_SPEEDS, estimate_reading
from app.settings import Settings


def test_the_estimate_is_for_the_versions_engine(tmp_path):
    settings = Settings(data_dir=tmp_path, engine="transformers")
    remote = ModelVersion(name="remote", base_model="m", engine="openai", template_set=settings.template_set)
    e = estimate_reading(1000, settings, remote)
    assert (e.engine, e.seconds) == ("openai", None)  # served remotely: no speed figure, whatever the settings say
    local = ModelVersion(name="local", base_model="m", engine="vllm-local", template_set=settings.template_set)
    assert estimate_reading(1000, settings, local).basis == ENGINE_SPEEDS["vllm-local"].basis
    own = ModelVersion(name="own", base_model="m", engine=None, template_set=settings.template_set)
    assert estimate_reading(1000, settings, own).engine == "transformers"  # none of its own: the settings'
