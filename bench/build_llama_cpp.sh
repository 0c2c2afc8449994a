#!/usr/bin/env bash
# Builds llama.cpp's llama-bench (CPU) from the source inside the
# llama-cpp-python sdist, for side-by-side speed runs. Cached in
# third_party/ (ignored by git): a second run only checks the binary is there.
# Usage: bench/build_llama_cpp.sh  ->  prints the path of llama-bench
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
version=0.3.36
dest="$top/third_party/llama-cpp-python-$version"
bin="$dest/build/bin/llama-bench"
if [ ! -x "$bin" ]; then
    mkdir -p "$top/third_party"
    if [ ! -d "$dest/src" ]; then
        tmp=$(mktemp -d)
        python3 -m pip download --quiet --no-deps --no-binary :all: -d "$tmp" "llama-cpp-python==$version"
        mkdir -p "$dest"
        tar xzf "$tmp"/llama_cpp_python-$version.tar.gz -C "$dest" --strip-components=1
        mv "$dest/vendor/llama.cpp" "$dest/src"
        rm -rf "$tmp"
    fi
    log="$dest/build.log"
    echo "building llama-bench (several minutes on 2 cores; log: $log)" >&2
    if ! { cmake -S "$dest/src" -B "$dest/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
              -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF &&
           cmake --build "$dest/build" -j"$(nproc)" --target llama-bench; } >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        exit 1
    fi
fi
echo "$bin"
