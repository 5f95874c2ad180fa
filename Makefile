# Two commands on a fresh clone: `make run` and `make test`. Each creates .venv and installs
# what it needs, so either works alone.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test install index clean triage-model

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

index: $(STAMP)
	$(BIN)/medbot index-default

# Retrain triage layer 2 after editing core/safety/data/train/*.tsv (writes core/safety/data/triage_model.*)
triage-model: $(STAMP)
	$(BIN)/medbot triage train

run: $(STAMP)
	$(BIN)/medbot run

test: $(STAMP)
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache
