# unerase task runner. Every target creates .venv when it is missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup serve test test-fast e2e lint bench bench-matcher bench-llm bench-web bench-precedents bench-uses bench-jobs bench-workers bench-shared clean

# llama-cpp-python compiles llama.cpp on install. Its default, -march=native, turns on every instruction set the
# build machine has; on this workplace's CPUs (AVX512 with AMX) that build crashed in its first decode (a
# segmentation fault inside llama_decode, in every test that runs a model), while a portable x86-64 build with
# AVX2 runs, is fast enough for the small test model, and runs wherever it is built. Pip's wheel cache is bypassed so a
# native wheel built earlier on this machine is never reused. Override with LLAMA_CMAKE_ARGS=... (e.g. on ARM).
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c 'import llama_cpp' 2>/dev/null || \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install -q --no-cache-dir 'llama-cpp-python[server]>=0.3'
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

bench: bench-matcher bench-llm bench-web bench-precedents bench-uses bench-jobs bench-workers bench-shared

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

# `unerase detect --jobs 2` against --jobs 1 side by side, then 1,000,000 records through --jobs 2 with peak memory
# (about 700 MB of temporary files); JOBS_BENCH_ARGS="--big 0" skips the big run.
bench-jobs: $(STAMP)
	$(PY) benchmarks/bench_jobs.py $(JOBS_BENCH_ARGS)

# Batch rows per second with two `unerase worker` processes against one, side by side, against a slow scripted
# model server (PostgreSQL when UNERASE_TEST_DATABASE_URL is set, else SQLite); WORKERS_BENCH_ARGS="--rows 200" is shorter.
bench-workers: $(STAMP)
	$(PY) benchmarks/bench_workers.py $(WORKERS_BENCH_ARGS)

# What a rate-limit check, a login check, a cached answer and a change-feed read cost: in memory, SQLite and
# (with UNERASE_TEST_DATABASE_URL) PostgreSQL side by side.
bench-shared: $(STAMP)
	$(PY) benchmarks/bench_shared.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
