#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` (parallel slots, continuous batching) from the llama.cpp
# sources vendored in the llama-cpp-python source distribution on PyPI. Benchmarks use it;
# the tests use llama-cpp-python's server instead, which answers one request at a time.
# Also builds `llama-quantize` (writes other weight formats of a model, for bench_llm.py --model) and
# `llama-batched-bench` (the machine's decoding speed with 1, 2, 4... sequences at once).
# Output: benchmarks/.build/ (not committed). About 10 minutes on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/.build"
py="${PYTHON:-$here/../.venv/bin/python}"
tools=(llama-server llama-quantize llama-batched-bench)
built=1
for tool in "${tools[@]}"; do [ -x "$out/$tool" ] || built=0; done
if [ "$built" = 1 ]; then echo "$out/llama-server"; exit 0; fi
version="$("$py" -c 'import llama_cpp; print(llama_cpp.__version__)')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$py" -m pip download -q --no-binary :all: --no-deps "llama-cpp-python==$version" -d "$work" >&2
tar xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$work/build" --target "${tools[@]}" -j "$(nproc)" >&2
mkdir -p "$out"
for tool in "${tools[@]}"; do cp "$work/build/bin/$tool" "$out/"; done
echo "$out/llama-server"
