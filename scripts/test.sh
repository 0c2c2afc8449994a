#!/usr/bin/env bash
# Runs the whole test suite: sets up (install, build, model), checks the
# sources' format (scripts/format.sh --check, where clang-format is
# installed), then the C tests
# (ctest) on the release build, the C tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer, the multi-threaded ones under ThreadSanitizer,
# then the Python-side tests (pytest; the symbol test reads a shared build of
# the library, build-shared/), the Python package from its wheel in a fresh
# virtual environment (scripts/test_python_package.sh), and the server's tests
# once more with the ASan build serving (leaks and memory errors in the HTTP
# layer). The
# release build includes the CUDA backend when nvcc is found (its GPU tests
# skip without a GPU); the sanitizer builds leave it out (-DHEARTH_CUDA=OFF):
# the sanitizers instrument only the C code, and compiling the kernels twice
# more would cost minutes on CI's two cores.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/setup.sh

if command -v clang-format >/dev/null; then
    echo "== format (.clang-format)"
    scripts/format.sh --check
fi

echo "== C tests (release)"
ctest --test-dir build --output-on-failure

echo "== C tests under ASan + UBSan"
scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEARTH_SANITIZE=ON -DHEARTH_CUDA=OFF -DHEARTH_BUILD_TESTS=ON
# HEARTH_TEST_SHORT: the slow tests run their short forms (quartered long
# contexts, the greedy fixtures with the exact path only, the engine's
# threading tests): memory errors show there as well, at a fraction of the time.
HEARTH_TEST_SHORT=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure

echo "== multi-threaded decode, matmul and the engine under ThreadSanitizer"
scripts/build.sh build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEARTH_TSAN=ON -DHEARTH_CUDA=OFF -DHEARTH_BUILD_TESTS=ON
# (not test_context_memory: its decodes, passes of several n_ubatch sizes, run the thread pool and
# kernels test_context runs here, and took 7 of the suite's minutes under TSan)
HEARTH_TEST_SHORT=1 TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan --output-on-failure -R "test_context|test_cpu_matmul|test_engine" \
    -E test_context_memory

echo "== the shared library, for its symbol test (the library target only, without CUDA)"
cmake -S "$top" -B "$top/build-shared" -DBUILD_SHARED_LIBS=ON -DHEARTH_CUDA=OFF -DHEARTH_BUILD_TESTS=OFF >/dev/null
cmake --build "$top/build-shared" -j"$(nproc)" --target hearth_shared

echo "== Python tests"
HEARTH_BIN="$top/build/hearth" HEARTH_SHARED_LIB="$top/build-shared/libhearth.so" python3 -m pytest -q tests/python

echo "== the Python package: its wheel (as pip install . builds it) in a fresh venv, and its tests"
scripts/test_python_package.sh

echo "== server tests with the ASan + UBSan build serving (and its tool calls: parsing, deltas, events; embeddings; reranking; the Responses, Ollama (pull and delete too) and Anthropic APIs; connections: parking, deadlines, limits, HTTPS)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    HEARTH_BIN="$top/build/hearth" HEARTH_SERVER_BIN="$top/build-asan/hearth" \
    python3 -m pytest -q tests/python/test_server.py tests/python/test_tools.py tests/python/test_embeddings_server.py tests/python/test_rerank_server.py tests/python/test_ollama_server.py tests/python/test_ollama_pull.py tests/python/test_anthropic_server.py tests/python/test_responses_server.py tests/python/test_llama_native_server.py tests/python/test_connections.py tests/python/test_models_server.py

# The Node package against the release build's addon (build/hearth.node).
echo "== Node package tests"
HEARTH_BIN="$top/build/hearth" HEARTH_NODE_ADDON="$top/build/hearth.node" node --test bindings/node/test/*.test.js

# The addon's threads and lifetimes (streams, cancelling, disposing, exit)
# again with the ASan + UBSan build's addon, the sanitizer runtimes preloaded
# into node (leak checking off: node itself leaves memory to the OS at exit).
echo "== Node package stream and model tests with the ASan + UBSan addon"
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    HEARTH_NODE_ADDON="$top/build-asan/hearth.node" node --test bindings/node/test/stream.test.js bindings/node/test/model.test.js
