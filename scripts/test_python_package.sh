#!/usr/bin/env bash
# Builds the Python package's wheel the way `pip install .` does, installs it
# into a fresh virtual environment and runs the package's tests there, from
# outside the source tree (so `import hearth` can only find the wheel).
# The wheel is built without the CUDA backend: the release build compiles the
# kernels already, and compiling them once more costs minutes on CI's two
# cores. The build folder build-pywheel/ is kept between runs.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
rm -rf build-pywheel/dist build-pywheel/venv
python3 -m pip wheel . --no-deps --quiet --disable-pip-version-check -w build-pywheel/dist \
    -C cmake.define.HEARTH_CUDA=OFF -C build-dir=build-pywheel/cmake
python3 -m venv build-pywheel/venv
venv=build-pywheel/venv/bin
"$venv/pip" install --quiet --disable-pip-version-check build-pywheel/dist/hearth-*-cp39-abi3-*.whl pytest gguf==0.19.0 numpy \
    jsonschema pydantic
cd "$(mktemp -d)"
HEARTH_TEST_INSTALLED=1 HEARTH_BIN="$top/build/hearth" \
    HEARTH_TEST_MODEL="$top/models/SmolLM2-135M-Instruct.Q4_1.gguf" \
    HEARTH_TEST_QWEN="$top/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" \
    HEARTH_TEST_REFERENCE="$top/tests/reference/greedy/smollm2.json" \
    HEARTH_TEST_TINY="$top/tests/reference/arch/llama3-f32.gguf" \
    "$top/$venv/python" -m pytest -q -p no:cacheprovider "$top/bindings/python/tests"
