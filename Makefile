# unerase task runner. Every target creates .venv when it is missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup serve test test-fast e2e lint bench bench-matcher bench-llm bench-web bench-precedents bench-uses clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,llm,examples]'
	touch $(STAMP)

setup: $(STAMP)

serve: $(STAMP)
	$(PY) -m web

test: $(STAMP)
	$(PY) -m pytest

# A quicker local loop: everything but the tests that run a real language model (CI runs `make test`).
test-fast: $(STAMP)
	$(PY) -m pytest -m "not llm"

# Only the browser tests (they also run in `make test`); screenshots land in e2e/artifacts/.
e2e: $(STAMP)
	$(PY) -m pytest e2e

lint: $(STAMP)
	$(VENV)/bin/ruff check engine web tests benchmarks e2e
	$(VENV)/bin/ruff format --check engine web tests benchmarks e2e
	$(VENV)/bin/mypy engine web

bench: bench-matcher bench-llm bench-web bench-precedents bench-uses

bench-matcher: $(STAMP)
	$(PY) benchmarks/bench_matcher.py

bench-llm: $(STAMP)
	benchmarks/build_llama_server.sh
	$(PY) benchmarks/bench_llm.py

# Streaming latency, API throughput (uvicorn, 2 and 1 workers) and a 100,000-row batch; BENCH_ARGS=--quick for a short run.
bench-web: $(STAMP)
	$(PY) benchmarks/bench_web.py $(BENCH_ARGS)

# Precedent decisions on held-out reviewed items from tests/corpora (SQLite; PostgreSQL too with UNERASE_TEST_DATABASE_URL),
# the word-overlap rule beside the example source (embeddings, docs/examples.md) in one run.
bench-precedents: $(STAMP)
	$(PY) benchmarks/bench_precedents.py

bench-uses: $(STAMP)
	$(PY) benchmarks/bench_uses.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
