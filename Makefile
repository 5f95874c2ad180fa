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

.PHONY: run test install index clean

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

install: $(STAMP)

# Rebuild the prebuilt index shipped in core/knowledge/index/ (run after editing the corpus;
# tests/test_prebuilt_index.py fails until it is done).
index: $(STAMP)
	$(BIN)/medbot index-default --package

run: $(STAMP)
	$(BIN)/medbot run

test: $(TEST_STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache
