#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` (parallel slots, continuous batching) from the llama.cpp
# sources vendored in the llama-cpp-python source distribution on PyPI. Benchmarks use it;
# the tests use llama-cpp-python's server instead, which answers one request at a time.
# Output: benchmarks/.build/llama-server (not committed). Takes about 10 minutes on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/.build"
py="${PYTHON:-$here/../.venv/bin/python}"
if [ -x "$out/llama-server" ]; then echo "$out/llama-server"; exit 0; fi
version="$("$py" -c 'import llama_cpp; print(llama_cpp.__version__)')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$py" -m pip download -q --no-binary :all: --no-deps "llama-cpp-python==$version" -d "$work" >&2
tar xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF >&2
cmake --build "$work/build" --target llama-server -j "$(nproc)" >&2
mkdir -p "$out"
cp "$work/build/bin/llama-server" "$out/llama-server"
echo "$out/llama-server"
