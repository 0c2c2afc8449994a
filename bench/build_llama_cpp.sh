#!/usr/bin/env bash
# Builds one of llama.cpp's tools (CPU) from the source inside the
# llama-cpp-python sdist (bench/llama_cpp_source.sh unpacks it), for
# side-by-side runs: llama-bench (the default; for bench/compare_llama_cpp.py)
# or llama-server (for bench/compare_serve.py).
# Cached in third_party/ (ignored by git): a second run only checks the binary
# is there. Nothing is fetched at build time: no curl, no OpenSSL (so no HTTPS
# model downloads) and no embedded Web UI (neither npm nor the UI download).
# LLAMA_ISA=avx2 builds an AVX2-only llama.cpp (AVX2, FMA, F16C; no AVX-512,
# whatever the machine has) into its own folder, for measuring hearth's AVX2
# level (HEARTH_CPU=avx2) on an AVX-512 machine against the same instruction
# set; LLAMA_ISA=avx512 builds AVX-512 (F, BW, DQ, VL, VBMI, VNNI, BF16) and
# AVX-VNNI without AMX, for machines whose CPU lists AMX but whose kernel or
# hypervisor does not let processes use it (the native build dies there with
# SIGILL in tinygemm_kernel_amx); the default is llama.cpp's native build
# (-DGGML_NATIVE=ON).
# Usage: [LLAMA_ISA=native|avx2|avx512] bench/build_llama_cpp.sh [llama-bench|llama-server]  ->  prints the binary's path
set -euo pipefail
target=${1:-llama-bench}
case "$target" in
    llama-bench|llama-server) ;;
    *) echo "usage: $0 [llama-bench|llama-server]" >&2; exit 2 ;;
esac
case "${LLAMA_ISA:-native}" in
    native) build=build; isa=(-DGGML_NATIVE=ON) ;;
    avx2) build=build-avx2
          isa=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
               -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF
               -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF) ;;
    avx512) build=build-avx512
          isa=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
               -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON
               -DGGML_AVX_VNNI=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF) ;;
    *) echo "$0: LLAMA_ISA must be native, avx2 or avx512" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
src=$("$top/bench/llama_cpp_source.sh")  # downloads and unpacks it the first time
dest=$(dirname "$src")
bin="$dest/$build/bin/$target"
if [ ! -x "$bin" ]; then
    log="$dest/$build-$target.log"
    echo "building $target (several minutes on 2 cores; log: $log)" >&2
    if ! { cmake -S "$src" -B "$dest/$build" -DCMAKE_BUILD_TYPE=Release "${isa[@]}" \
              -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
              -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF &&
           cmake --build "$dest/$build" -j"$(nproc)" --target "$target"; } >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        exit 1
    fi
fi
echo "$bin"
