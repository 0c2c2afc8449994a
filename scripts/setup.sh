#!/usr/bin/env bash
# Installs what hearth needs on Debian/Ubuntu (compiler, CMake, PCRE2, cJSON,
# libcurl, OpenSSL, libmicrohttpd; the OpenCL headers, ICD loader, CLBlast (prompt products) and
# PoCL, which runs the OpenCL backend's tests on the CPU; chromium, chromium-driver and selenium for the chat
# page's browser tests; gguf-py, numpy, pytest and openai for the tests), builds it
# in build/ (with the CUDA backend when the CUDA toolkit's nvcc is present;
# this script does not install the toolkit), and fetches the test models
# (SmolLM2, the default; Gemma 3 270M for the SentencePiece tokenizer;
# Qwen2.5-Coder 0.5B; all-MiniLM-L6-v2, the embedding model, converted to
# GGUF) into models/. Safe to run again: each step is cached.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

need=()
for p in build-essential cmake pkg-config libpcre2-dev libcjson-dev libcurl4-openssl-dev libssl-dev libmicrohttpd-dev \
         ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo libclblast-dev clang-format chromium chromium-driver; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need+=("$p")
done
command -v python3 >/dev/null || need+=(python3 python3-pip)
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
# The Python package's tests build a wheel and install it into a venv.
python3 -c "import venv, ensurepip" >/dev/null 2>&1 || need+=(python3-venv python3-dev)
# The Node package (bindings/node): node, npm and Node's headers (nodesource's
# nodejs has all three; Debian splits them).
command -v node >/dev/null || need+=(nodejs npm libnode-dev)
if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    echo "setup: installing ${need[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
pip_install() { python3 -m pip install --quiet --disable-pip-version-check "$@"; }
# Debian's own python3 refuses system-wide installs (PEP 668) unless told.
pip_install -r tests/requirements.txt 2>/dev/null || pip_install --break-system-packages -r tests/requirements.txt

scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DHEARTH_BUILD_TESTS=ON
scripts/fetch_model.sh smollm2 gemma3 qwen2 minilm
