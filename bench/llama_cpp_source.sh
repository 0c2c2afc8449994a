#!/usr/bin/env bash
# Unpacks llama.cpp's source from the llama-cpp-python sdist (PyPI) into
# third_party/llama-cpp-python-VERSION/src (ignored by git) and prints that
# folder; a second run only checks it is there. Shared by
# bench/build_llama_cpp.sh (CPU llama-bench / llama-server here) and
# bench/gpu/prepare.sh (the trimmed copy carried to a GPU machine).
# Usage: bench/llama_cpp_source.sh  ->  prints the source folder
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
version=0.3.36
dest="$top/third_party/llama-cpp-python-$version"
if [ ! -d "$dest/src" ]; then
    mkdir -p "$top/third_party"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    python3 -m pip download --quiet --no-deps --no-binary :all: -d "$tmp" "llama-cpp-python==$version"
    mkdir -p "$dest"
    tar xzf "$tmp"/llama_cpp_python-$version.tar.gz -C "$dest" --strip-components=1
    mv "$dest/vendor/llama.cpp" "$dest/src"
fi
echo "$dest/src"
