# unerase task runner. Every target creates .venv when it is missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup serve test lint bench bench-matcher bench-llm clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,llm]'
	touch $(STAMP)

setup: $(STAMP)

serve: $(STAMP)
	$(PY) -m web

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check engine web tests benchmarks
	$(VENV)/bin/ruff format --check engine web tests benchmarks
	$(VENV)/bin/mypy engine web

bench: bench-matcher bench-llm

bench-matcher: $(STAMP)
	$(PY) benchmarks/bench_matcher.py

bench-llm: $(STAMP)
	benchmarks/build_llama_server.sh
	$(PY) benchmarks/bench_llm.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
