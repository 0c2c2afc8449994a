#!/usr/bin/env bash
# Issue 10's GPU session in one script, for a lent H100/H200 machine (no
# network, 16 cores, nvcc, cmake, ninja, compute-sanitizer): run in the
# repository root with bench/gpu/carry/ (bench/gpu/prepare.sh) carried along.
#
#   bash bench/gpu/run.sh STAGE...     STAGE: check build llama models test
#                                      membw sanitize bench serve profile plan
#                                      summary, or all
#
#   check     GPU, driver, memory, tools, disk; no GPU = exit 1 (never a skip)
#   build     hearth, Release, CUDA for sm_90 only, tests on (own deps where
#             the machine lacks them: bench/gpu/deps.sh)
#   llama     llama.cpp's llama-bench and llama-server with CUDA for sm_90,
#             from the carried source
#   models    synthetic Llama-3.2-1B and Llama-3-8B shapes (gguf-py) at F16
#             and Q8_0, Q4_K_M by `hearth quantize` of the F16 file
#   test      the GPU tests, which must run on cuda0 (a skip fails the stage),
#             and CPU-vs-GPU greedy text on the tiny models in tests/reference
#   membw     device copy bandwidth (bench/gpu/membw.cu)
#   sanitize  compute-sanitizer memcheck and racecheck on test_backend_ops
#             -b cuda0, memcheck on a tiny model's generation
#   bench     hearth bench vs llama-bench, -ngl 99: pp512 and tg128 on each
#             model, tg128 at depth 4096 where `hearth bench` has -d
#   serve     hearth serve vs llama-server, -ngl 99, 16 slots, on the 1B shape
#             at Q4_K_M: aggregate tok/s at 1, 4 and 16 streams
#             (bench/compare_serve.py)
#   profile   ncu kernel times of pp512 (F16, Q8_0) and of generation
#             (Q4_K_M, Q8_0), both engines, 8B shape (bench/gpu/ncu_sum.py)
#   plan      `hearth info` memory plans of the 8B shape: -ngl auto -c 32768,
#             -ngl -1 -c 131072 -np 4
#   summary   $OUT/summary.md (bench/gpu/summary.py), printed last
#   all       every stage above; llama.cpp's build and the models run in the
#             background beside the tests and the sanitizer
#
# State is cached in $HEARTH_GPU_CACHE (default /tmp/hearth-gpu): a second
# call on the same warm machine skips what the first finished (`all` runs only
# the stages not yet recorded; a stage named on the command line runs again)
# and the bench resumes where it stopped. The script keeps to a time budget
# (HEARTH_GPU_BUDGET_S seconds, default 540): a stage that would not fit is
# recorded "not run (time)" and the next call does it. Every call writes
# $OUT/summary.md and $OUT/logs.tar.gz (all logs and raw results so far).
# Other settings: HEARTH_GPU_REPS (bench repetitions, default 3),
# HEARTH_GPU_MODELS (model folder; default: /dev/shm if it has room, else the
# cache), HEARTH_GPU_SHAPES (default "llama-3.2-1b llama-3-8b"),
# HEARTH_GPU_TYPES (default "Q4_K_M Q8_0 F16"), HEARTH_GPU_ENGINES (default
# "llama.cpp hearth": the bench's engines; hearth-unfused is hearth with
# HEARTH_CUDA_FUSED=0, without its fused decode ops), HEARTH_GPU_RESUME_ONLY=1
# (`all` on a fresh machine stops after check instead of starting over),
# HEARTH_GPU_N_LAYER (models with only that many layers, to try the stages on
# a small machine).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
here="$top/bench/gpu"
carry="$here/carry"
cache=${HEARTH_GPU_CACHE:-/tmp/hearth-gpu}
out=${OUT:-$cache/out}
budget=${HEARTH_GPU_BUDGET_S:-540}
reps=${HEARTH_GPU_REPS:-3}
shapes=${HEARTH_GPU_SHAPES:-llama-3.2-1b llama-3-8b}
types=${HEARTH_GPU_TYPES:-Q4_K_M Q8_0 F16}
engines=${HEARTH_GPU_ENGINES:-llama.cpp hearth}
jobs=$(nproc)
hb="$cache/build-hearth"
lb="$cache/build-llama"
t0=$SECONDS
mkdir -p "$cache"/{logs,results,status} "$out"
command -v nvcc >/dev/null || export PATH="$PATH:/usr/local/cuda/bin"
cd "$top" || exit 1

left() { echo $((budget - (SECONDS - t0))); }
# a timeout for one command: at most $1 s, and never past the budget (less 30 s for the summary)
tlimit() {
    local t=$(($(left) - 30))
    [ "$t" -gt "$1" ] && t=$1
    [ "$t" -lt 10 ] && t=10
    echo "$t"
}
say() { echo "[$(printf '%4d' $((SECONDS - t0)))s] $*"; }
# status file of a stage: "STATE<TAB>SECONDS<TAB>NOTE"; STATE ok, FAIL or "not run"
set_status() { printf '%s\t%s\t%s\n' "$2" "$3" "$4" >"$cache/status/$1"; }
state() { [ -f "$cache/status/$1" ] && cut -f1 "$cache/status/$1" || echo none; }
models_dir() { cat "$cache/models_dir" 2>/dev/null; }
# the file of a model: shape, type ("Q4_K_M"); HEARTH_GPU_N_LAYER cuts the layers (to try the stages on a small machine)
model_path() { echo "$(models_dir)/synthetic-$1${HEARTH_GPU_N_LAYER:+-${HEARTH_GPU_N_LAYER}l}-${2,,}.gguf"; }

# ---------------------------------------------------------------- stages
stage_check() {
    if ! command -v nvidia-smi >/dev/null; then
        echo "FATAL: no NVIDIA GPU here (no nvidia-smi); this script is for the GPU machine"
        return 1
    fi
    if ! nvidia-smi -L | grep -q '^GPU'; then
        echo "FATAL: no NVIDIA GPU here (nvidia-smi -L: $(nvidia-smi -L 2>&1 | head -1))"
        return 1
    fi
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.max.sm,clocks.max.mem,power.limit,compute_cap \
        --format=csv | tee "$cache/results/gpu.csv"
    nvidia-smi
    echo "--- tools"
    for t in nvcc cmake ninja gcc g++ python3 compute-sanitizer ncu pkg-config; do
        printf '%-18s %s\n' "$t" "$(command -v "$t" || echo MISSING)"
    done
    nvcc --version | tail -2
    cmake --version | head -1
    python3 -c 'import numpy, yaml, tqdm, requests; print("python", __import__("sys").version.split()[0], "numpy", numpy.__version__)'
    echo "--- machine"
    nproc; free -g; uname -r
    df -h / /tmp /dev/shm 2>/dev/null
    echo "--- carried"
    ls -la "$carry" "$carry/wheels" 2>&1
    [ -f "$carry/llama.cpp.tar.xz" ] && [ -f "$carry/deps/.complete" ] ||
        { echo "FATAL: bench/gpu/carry/ is incomplete: run bench/gpu/prepare.sh here and name bench/gpu/carry in carry"; return 1; }
    # where the models go: RAM (/dev/shm) when it holds them all (~36 GB), else the cache's disk
    local dir=${HEARTH_GPU_MODELS:-}
    [ -z "$dir" ] && [ -d "$(models_dir)" ] && dir=$(models_dir) # an earlier call's choice (it holds the models)
    if [ -z "$dir" ]; then
        local shm
        shm=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $4}')
        if [ "${shm:-0}" -gt $((40 * 1024 * 1024)) ]; then dir=/dev/shm/hearth-models; else dir="$cache/models"; fi
    fi
    mkdir -p "$dir" && echo "$dir" >"$cache/models_dir"
    {
        echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) CPUs, $(free -g | awk '/Mem:/ {print $2}') GiB RAM, kernel $(uname -r)"
        echo "hearth: $(git -C "$top" describe --always --dirty 2>/dev/null || cat "$carry/commit" 2>/dev/null || echo '(commit unknown)'); $(nvcc --version | tail -1)"
    } >"$cache/results/machine.txt"
    echo "models in $dir ($(df -h --output=avail "$dir" | tail -1) free)"
}

stage_build() {
    # shellcheck source=bench/gpu/deps.sh
    source "$here/deps.sh" "$carry/deps" "$cache/deps" >"$cache/deps.report" || { cat "$cache/deps.report"; return 1; }
    cat "$cache/deps.report"
    # CMake caches what pkg-config found: configure afresh when the dependencies came from elsewhere last time
    cmp -s "$cache/deps.report" "$hb/deps.report" || rm -f "$hb/CMakeCache.txt"
    mkdir -p "$hb" && cp "$cache/deps.report" "$hb/deps.report"
    cmake -S "$top" -B "$hb" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHEARTH_BUILD_TESTS=ON -DHEARTH_CUDA=ON \
        -DHEARTH_CUDA_ARCHS=90 -DHEARTH_OPENCL=OFF -DHEARTH_NODE=OFF -DHEARTH_PYTHON=OFF \
        -DCMAKE_EXE_LINKER_FLAGS="$HEARTH_DEPS_LDFLAGS" -DCMAKE_SHARED_LINKER_FLAGS="$HEARTH_DEPS_LDFLAGS" || return 1
    time timeout "$(tlimit 900)" cmake --build "$hb" -j"$jobs" || return $(($? == 124 ? 2 : 1)) # 2: stopped at the budget, resumable
    "$hb/hearth" info
    # the resource report of the kernels (registers, spills, stack) for the record
    if command -v cuobjdump >/dev/null; then
        for o in $(find "$hb" -name '*.cu.o' | sort); do
            echo "--- $(basename "$o")"
            cuobjdump -res-usage "$o" 2>&1 | grep -E 'Function|REG'
        done >"$cache/logs/kernels-res-usage.txt"
    fi
    return 0
}

stage_llama() {
    if [ ! -f "$cache/llama.cpp/CMakeLists.txt" ]; then
        rm -rf "$cache/llama.cpp"
        # Python's tarfile reads .xz without the xz command, which a machine may lack
        python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
            "$carry/llama.cpp.tar.xz" "$cache" || return 1
    fi
    cmake -S "$cache/llama.cpp" -B "$lb" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=ON -DGGML_CUDA_NCCL=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_SERVER=ON \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF || return 1
    time timeout "$(tlimit 900)" cmake --build "$lb" -j"$jobs" --target llama-bench || return $(($? == 124 ? 2 : 1)) # 2: stopped at the budget, resumable
    "$lb/bin/llama-bench" --list-devices 2>&1 | head
    # llama-server (issue 10 item 7, batched decode: the serve stage): most of it is built already; if it
    # fails, the bench still has its baseline and the serve stage says so
    time timeout "$(tlimit 300)" cmake --build "$lb" -j"$jobs" --target llama-server ||
        echo "llama-server: not built (exit $?); the serve stage cannot run"
    return 0
}

stage_models() {
    local dir
    dir=$(models_dir) || return 1
    [ -n "$dir" ] || { echo "no model folder: run the check stage first"; return 1; }
    if ! python3 -c 'import gguf' 2>/dev/null; then
        python3 -m pip install -q --no-index --no-deps --no-compile --target "$cache/site" "$carry"/wheels/*.whl || return 1
    fi
    export PYTHONPATH="$cache/site${PYTHONPATH:+:$PYTHONPATH}"
    local shape t need_gb free_gb
    for shape in $shapes; do # per shape: F16 (also what Q4_K_M is quantized from), Q4_K_M, Q8_0
        for t in F16 Q4_K_M Q8_0; do
            local f
            f=$(model_path "$shape" "$t")
            [ -f "$f" ] && continue
            case "$t $types" in Q4_K_M*Q4_K_M* | F16*F16* | F16*Q4_K_M* | Q8_0*Q8_0*) ;; *) continue ;; esac
            # room for the file (at most the F16 size: 2.5 GB for 1B, 16.1 GB for 8B), else stop here
            need_gb=3
            [ "$shape" = llama-3-8b ] && need_gb=17
            free_gb=$(df -Pk "$dir" | awk 'NR == 2 {print int($4 / 1048576)}')
            if [ "$free_gb" -lt "$need_gb" ]; then
                echo "FATAL: $dir has $free_gb GiB free, $(basename "$f") needs up to $need_gb: set HEARTH_GPU_MODELS or HEARTH_GPU_TYPES"
                return 1
            fi
            case $t in
                Q4_K_M)
                    timeout "$(tlimit 900)" "$hb/hearth" quantize "$(model_path "$shape" F16)" "$f" Q4_K_M -t "$jobs" || return $(($? == 124 ? 2 : 1)) ;;
                *)
                    timeout "$(tlimit 900)" python3 "$top/bench/make_synthetic_llama.py" --shape "$shape" --type "$t" --out "$dir" \
                        ${HEARTH_GPU_N_LAYER:+--n-layer "$HEARTH_GPU_N_LAYER"} || return $(($? == 124 ? 2 : 1)) ;;
            esac
        done
    done
    ls -la "$dir"
}

# The environment ctest gives a test (its ENVIRONMENT property: where the CUDA
# module is, fixtures, models), one NAME=VALUE a line.
ctest_env() {
    ctest --test-dir "$hb" -R "^$1\$" --show-only=json-v1 | python3 -c '
import json, sys
for t in json.load(sys.stdin)["tests"]:
    for p in t.get("properties", []):
        if p["name"] == "ENVIRONMENT":
            print("\n".join(p["value"] if isinstance(p["value"], list) else [p["value"]]))'
}

# A test binary, run with ctest's environment and the overrides given
# (NAME=VALUE ...: models/ does not travel); it must not skip.
gpu_test() {
    local name=$1 envs tag
    shift
    echo "--- $name $*"
    mapfile -t envs < <(ctest_env "$name")
    tag=$(printf '%s\n' "$@" | sed -n 's|^HEARTH_MODEL=.*/\(.*\)\.gguf$|-\1|p')
    local log="$cache/logs/test-$name$tag.log" rc
    timeout "$(tlimit 300)" env "${envs[@]}" HEARTH_TEST_DIR="$top/tests" "$@" "$hb/tests/$name" >"$log" 2>&1
    rc=$?
    cat "$log"
    [ $rc -eq 124 ] && echo "RESULT $name: FAIL (stopped at the time budget)"
    # a skip fails, but for the CPU backends' refusals in test_backend_ops
    # ("SKIP ... at 0 cpu    not supported": the exact CPU attention takes no
    # quantized V cache, as llama.cpp's without flash attention)
    if [ $rc -eq 77 ] || grep '^SKIP' "$log" | grep -qvE ' cpu(-[a-z-]+)? +not supported$'; then
        echo "RESULT $name: FAIL (skipped on a GPU machine: $(grep '^SKIP' "$log" | grep -m1 -vE ' cpu(-[a-z-]+)? +not supported$'))"
        return 1
    fi
    [ $rc -eq 0 ] && echo "RESULT $name: ok" || echo "RESULT $name: FAIL (exit $rc)"
    return $rc
}

stage_test() {
    local fail=0 t m tiny="$top/tests/reference/tiny/tiny-q8_0.gguf"
    gpu_test test_backend_ops || fail=1
    grep -q '^testing cuda0' "$cache/logs/test-test_backend_ops.log" ||
        { echo "RESULT test_backend_ops: FAIL (no 'testing cuda0' line: the GPU part did not run)"; fail=1; }
    for t in "$hb"/tests/test_gpu_*; do # test_gpu_dequant, test_gpu_vecdot ... (test_gpu_offload below)
        case $(basename "$t") in test_gpu_offload) ;; *) gpu_test "$(basename "$t")" || fail=1 ;; esac
    done
    # The CPU kernel tests at the host's best level (their logs name it): these
    # hosts are the only AVX-512 machines the sessions get, and the AVX-512
    # kernels run nowhere else.
    for t in test_vec_dot_f test_vec_dot_k test_cpu_matmul test_cpu_kernels; do gpu_test "$t" || fail=1; done
    gpu_test test_placement HEARTH_MODEL="$tiny" || fail=1
    # SmolLM2 (94 MiB) cannot travel: the tiny models of tests/reference, one
    # per weight type and architecture, run every part of the test (a ChatML
    # prompt is only text to them). A model whose blocks the GPU does not take
    # (head_dim 10, 12 or 18 in llama3-f32, qwen2-f16 and some arch models:
    # the CUDA attention's 16-byte loads need multiples of 8, as every real
    # model has) cannot pass its all-layers checks: `hearth run -ngl -1` on it
    # instead, the blocks on the CPU and the output layer alone on the GPU
    for m in "$top"/models/SmolLM2-135M-Instruct.Q4_1.gguf "$top"/tests/reference/tiny/*.gguf "$top"/tests/reference/arch/*.gguf; do
        [ -f "$m" ] || continue
        local info n_layer on_gpu
        info=$("$hb/hearth" info "$m" -ngl -1 2>&1)
        n_layer=$(sed -n 's/^  n_layer: //p' <<<"$info")
        on_gpu=$(sed -n 's/^  layers on GPU: //p' <<<"$info")
        if [ -n "$n_layer" ] && [ "$on_gpu" = $((n_layer + 1)) ]; then
            gpu_test test_gpu_offload HEARTH_MODEL="$m" || fail=1
            continue
        fi
        echo "--- $(basename "$m"): $on_gpu of $((n_layer + 1)) layers on the GPU ($(grep -m1 'stays on the CPU' <<<"$info")): hearth run -ngl -1"
        if timeout "$(tlimit 60)" "$hb/hearth" run "$m" "Hello" -n 8 --temp 0 -ngl -1 >"$cache/logs/test-partial-$(basename "$m" .gguf).log" 2>&1; then
            echo "RESULT partial $(basename "$m"): ok"
        else
            echo "RESULT partial $(basename "$m"): FAIL (exit $?)"; tail -3 "$cache/logs/test-partial-$(basename "$m" .gguf).log"; fail=1
        fi
    done
    if [ -n "${HEARTH_GPU_CTEST_ALL:-}" ]; then
        echo "--- the whole ctest suite (HEARTH_GPU_CTEST_ALL)"
        ctest --test-dir "$hb" -j"$jobs" --output-on-failure || fail=1
    fi
    return $fail
}

stage_membw() {
    nvcc -O3 -arch=sm_90 -o "$cache/membw" "$here/membw.cu" || return 1
    "$cache/membw" | tee "$cache/results/membw.txt"
}

stage_sanitize() {
    local fail=0 tool log envs
    for tool in memcheck racecheck; do
        log="$cache/logs/sanitize-$tool.log"
        echo "--- compute-sanitizer --tool $tool test_backend_ops -b cuda0"
        mapfile -t envs < <(ctest_env test_backend_ops)
        timeout "$(tlimit 150)" env "${envs[@]}" compute-sanitizer --tool "$tool" --error-exitcode 99 \
            "$hb/tests/test_backend_ops" -b cuda0 >"$log" 2>&1
        echo "exit $? (0 clean, 99 errors found, 124 out of time)"
        grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|case runs passed|FAIL' "$log" | head -20
        grep -qE '(ERROR|RACECHECK) SUMMARY: 0 ' "$log" || fail=1
    done
    log="$cache/logs/sanitize-memcheck-run.log"
    echo "--- compute-sanitizer --tool memcheck hearth run (tiny model, all layers on the GPU)"
    timeout "$(tlimit 90)" compute-sanitizer --tool memcheck --error-exitcode 99 "$hb/hearth" run \
        "$top/tests/reference/tiny/tiny-q8_0.gguf" "Once upon a time" -n 16 --temp 0 -ngl -1 >"$log" 2>&1
    echo "exit $?"
    grep -E 'ERROR SUMMARY' "$log"
    grep -qE 'ERROR SUMMARY: 0 ' "$log" || fail=1
    return $fail
}

# One engine's run of one test on one model, saved as JSON under results/ (a
# result already there is kept: a second call resumes the bench).
bench_one() {
    local engine=$1 model=$2 test=$3
    local res args
    res="$cache/results/bench-$(basename "$model" .gguf)-$test-$engine.json"
    [ -s "$res" ] && return 0
    case $test in
        pp512+tg128) args=(-p 512 -n 128) ;; # one load of the model for both
        tg128@d4096) args=(-p 0 -n 128 -d 4096) ;;
    esac
    local cmd
    case $engine in
        hearth) cmd=("$hb/hearth" bench "$model") ;;
        hearth-unfused) cmd=(env HEARTH_CUDA_FUSED=0 "$hb/hearth" bench "$model") ;; # without the fused decode ops
        *) cmd=("$lb/bin/llama-bench" -m "$model") ;;
    esac
    cmd+=("${args[@]}" -ngl 99 -r "$reps" -o json)
    echo "$ ${cmd[*]}" | tee -a "$cache/results/commands.txt"
    if timeout "$(tlimit 180)" "${cmd[@]}" >"$res.part" 2>>"$cache/logs/bench-stderr.log"; then
        mv "$res.part" "$res"
        python3 -c 'import json, sys; print("  " + ", ".join("%.1f t/s" % r["avg_ts"] for r in json.load(open(sys.argv[1]))))' "$res"
    else
        echo "  FAILED (exit $?; stderr in logs/bench-stderr.log)"
        mv "$res.part" "$res.failed"
        return 1
    fi
}

stage_bench() {
    local fail=0 later=0 shape t m test engine tests=(pp512+tg128)
    echo "$reps" >"$cache/results/reps"
    "$hb/hearth" bench --help 2>&1 | grep -q -- '--n-depth' && tests+=(tg128@d4096) ||
        echo "note: hearth bench has no -d here: tg128 at depth 4096 not run"
    # standard tests first on every model (Q4_K_M first: the main case), then the depth test
    for test in "${tests[@]}"; do
        for t in $types; do
            for shape in $shapes; do
                m=$(model_path "$shape" "$t")
                if [ ! -f "$m" ]; then # not written yet (models stopped at the budget) or failed
                    echo "no $m: models stage $(state models)"
                    [ "$(state models)" = FAIL ] && fail=1 || later=1
                    continue
                fi
                for engine in $engines; do
                    if [ "$(left)" -lt 45 ]; then echo "out of time: the rest of the bench runs in the next call"; return 2; fi
                    bench_one "$engine" "$m" "$test" || fail=1
                done
            done
        done
    done
    [ $fail = 0 ] && [ $later = 1 ] && return 2
    return $fail
}

# Batched decode (issue 10 item 7): both servers with 16 slots on the GPU,
# driven by 1, 4 and 16 streaming clients (bench/compare_serve.py).
stage_serve() {
    [ -x "$lb/bin/llama-server" ] || { echo "no llama-server: the llama stage did not build it"; return 1; }
    local m
    m=$(model_path llama-3.2-1b Q4_K_M)
    [ -f "$m" ] || { echo "no $m: models stage $(state models)"; return 1; }
    timeout "$(tlimit 240)" python3 "$top/bench/compare_serve.py" "$m" --parallel 16 --ctx 16384 --threads 4 \
        --ngl 99 --n-predict 128 --requests-per-client 4 --concurrency 1 4 16 --hearth "$hb/hearth" \
        --llama-server "$lb/bin/llama-server" --save "$cache/results/serve.json" | tee "$cache/results/serve.txt"
}

# Where a pass's GPU time goes (issue 10 item 6): ncu's kernel durations
# (one metric: no replay; clocks and caches left alone) over the first
# launches of a prompt run (`-p 512 -n 0 -r 1`: a warm-up pass, then the
# timed one) at F16 and Q8_0 and of a generation run (`-p 0 -n 32 -r 1`: ~3
# tokens of 1500 launches) at Q4_K_M and Q8_0, summed by kernel
# (ncu_sum.py), both engines, 8B shape.
stage_profile() {
    local ncu spec t test engine m name log fail=0
    ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    [ -n "$ncu" ] || { echo "no ncu"; return 1; }
    for spec in F16:pp512 Q8_0:pp512 Q4_K_M:tg Q8_0:tg; do
        t=${spec%:*} test=${spec#*:}
        m=$(model_path llama-3-8b "$t")
        [ -f "$m" ] || { echo "no $m"; fail=1; continue; }
        for engine in hearth llama.cpp; do
            name="profile-$engine-$(basename "$m" .gguf)-$test"
            log="$cache/logs/$name.csv"
            [ -s "$log" ] && continue
            if [ "$engine" = hearth ]; then set -- "$hb/hearth" bench "$m"; else set -- "$lb/bin/llama-bench" -m "$m"; fi
            [ -x "$1" ] || continue
            if [ "$test" = pp512 ]; then set -- "$@" -p 512 -n 0; else set -- "$@" -p 0 -n 32; fi
            echo "=== $engine $(basename "$m") $test: $ncu ... $*"
            timeout "$(tlimit 120)" "$ncu" --clock-control none --cache-control none --metrics gpu__time_duration.sum --print-units base \
                --launch-count "${HEARTH_GPU_PROFILE_LAUNCHES:-1500}" --csv --page raw --log-file "$log.part" \
                "$@" -r 1 -ngl 99 >/dev/null 2>>"$cache/logs/profile-stderr.log" || { fail=1; continue; }
            mv "$log.part" "$log"
            python3 "$here/ncu_sum.py" "$log" 20 | tee "$cache/results/$name.md"
        done
    done
    return $fail
}

# Memory planning (issue 10 item 8): the plan `hearth info` prints for
# -ngl auto with a long context and for everything on the GPU, then -ngl
# auto where the model does not fit (the GPU shown as 16 devices: cuda0 is a
# sixteenth, ~5 GB) and a generation with that plan.
stage_plan() {
    local t m a fail=0
    for t in Q4_K_M F16; do
        m=$(model_path llama-3-8b "$t")
        [ -f "$m" ] || continue
        for a in "-ngl auto -c 32768" "-ngl -1 -c 131072 -np 4"; do
            echo "=== hearth info $(basename "$m") $a"
            # shellcheck disable=SC2086
            timeout "$(tlimit 60)" "$hb/hearth" info "$m" $a || fail=1
        done
    done
    m=$(model_path llama-3-8b F16)
    [ -f "$m" ] || return $fail
    echo "=== HEARTH_CUDA_SPLIT=16 hearth info $(basename "$m") -ngl auto -c 8192 --device cuda0"
    HEARTH_CUDA_SPLIT=16 timeout "$(tlimit 60)" "$hb/hearth" info "$m" -ngl auto -c 8192 --device cuda0 || fail=1
    echo "=== HEARTH_CUDA_SPLIT=16 hearth run $(basename "$m") -ngl auto -c 8192 --device cuda0"
    HEARTH_CUDA_SPLIT=16 timeout "$(tlimit 90)" "$hb/hearth" run "$m" "Hello" -n 16 --temp 0 -ngl auto -c 8192 \
        --device cuda0 || fail=1
    return $fail
}

stage_summary() {
    python3 "$here/summary.py" "$cache" >"$out/summary.md"
}

# ---------------------------------------------------------------- driver
# Seconds a stage needs to be worth starting (bench/gpu/README.md has the
# times measured on an H200, with some room). The builds and the models resume where a call stopped them
# (ninja; whole files), and the bench run by run, so they start whenever a
# little time is left; the tests and the sanitizer start over, so they need
# their whole time.
est() {
    case $1 in check) echo 5 ;; build | llama | models) echo 30 ;; test) echo 60 ;;
        membw) echo 15 ;; sanitize) echo 40 ;; bench) echo 30 ;; serve) echo 90 ;; profile) echo 60 ;; plan) echo 10 ;; esac
}

# Runs a stage unless `all` finds it recorded already; logs to logs/STAGE.log.
run_stage() {
    local name=$1 forced=$2 st
    st=$(state "$name")
    if [ "$forced" = 0 ] && { [ "$st" = ok ] || [ "$st" = FAIL ]; }; then
        say "$name: recorded in an earlier call ($st)"
        return 0
    fi
    if [ "$(left)" -lt "$(est "$name")" ]; then
        say "$name: NOT RUN, needs ~$(est "$name") s, $(left) s left: call again"
        set_status "$name" "not run" 0 "time: needs ~$(est "$name") s, $(left) s were left"
        return 1
    fi
    say "$name ..."
    local s=$SECONDS rc
    "stage_$name" >"$cache/logs/$name.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        set_status "$name" ok $((SECONDS - s)) ""
    elif [ $rc -eq 2 ]; then
        set_status "$name" "not run" $((SECONDS - s)) "part done; out of time: call again"
    else
        set_status "$name" FAIL $((SECONDS - s)) "exit $rc; see logs/$name.log"
    fi
    say "$name: $(state "$name") in $((SECONDS - s)) s"
    grep -E '^(RESULT|FATAL|exit|  [0-9.]+ t/s|  FAILED|===)' "$cache/logs/$name.log" | tail -30
    [ $rc -eq 0 ]
}

# Background stages (`all`): started with their own process group and a lower
# CPU priority (the foreground's build and tests are the critical path),
# waited for until the budget ends, then stopped (a next call resumes them).
declare -A bg_pid
bg_start() {
    set -m
    { renice -n 10 "$BASHPID" >/dev/null; run_stage "$1" "$2"; } >"$cache/logs/$1.driver.log" 2>&1 &
    bg_pid[$1]=$!
    set +m
    say "$1: started in the background"
}
bg_wait() {
    local pid=${bg_pid[$1]:-}
    [ -n "$pid" ] || return 0
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$(left)" -lt 20 ]; then
            kill -- -"$pid" 2>/dev/null
            set_status "$1" "not run" 0 "stopped at the time budget: call again"
            say "$1: stopped at the time budget"
            break
        fi
        sleep 2
    done
    wait "$pid" 2>/dev/null
    cat "$cache/logs/$1.driver.log"
    unset "bg_pid[$1]"
}

finish() {
    local st=$?
    for s in "${!bg_pid[@]}"; do kill -- -"${bg_pid[$s]}" 2>/dev/null; done
    stage_summary 2>"$cache/logs/summary.stderr" || cat "$cache/logs/summary.stderr"
    tar -C "$cache" -czf "$out/logs.tar.gz" logs results status 2>/dev/null
    echo
    cat "$out/summary.md" 2>/dev/null
    exit $st
}

[ $# -gt 0 ] || { sed -n '2,40p' "$0"; exit 2; }
trap finish EXIT
# exit status: 1 if a stage failed (in this call or an earlier one), else 0
failed() { grep -q '^FAIL' "$cache"/status/* 2>/dev/null; }
if [ "$1" = all ]; then
    run_stage check 1 || exit 1
    if [ -n "${HEARTH_GPU_RESUME_ONLY:-}" ] && [ "$(state build)" != ok ]; then
        say "HEARTH_GPU_RESUME_ONLY: a fresh machine (no build from an earlier call): nothing to resume"
        exit 0
    fi
    bg_start llama 0
    run_stage build 0
    [ "$(state build)" = ok ] && bg_start models 0
    [ "$(state build)" = ok ] && run_stage test 0
    run_stage membw 0
    [ "$(state build)" = ok ] && run_stage sanitize 0
    bg_wait llama
    bg_wait models
    [ "$(state build)" = ok ] && [ "$(state llama)" = ok ] && run_stage bench 0
    [ "$(state build)" = ok ] && [ "$(state llama)" = ok ] && run_stage serve 0
    [ "$(state build)" = ok ] && [ "$(state models)" = ok ] && run_stage profile 0
    [ "$(state build)" = ok ] && [ "$(state models)" = ok ] && run_stage plan 0
    failed && exit 1
    exit 0
fi
for s in "$@"; do
    case $s in
        check) run_stage check 1 || exit 1 ;;
        build | llama | models | test | membw | sanitize | bench | serve | profile | plan) run_stage "$s" 1 ;;
        summary) ;; # always written at the end
        *) echo "unknown stage $s (check build llama models test membw sanitize bench serve profile plan summary all)" >&2; exit 2 ;;
    esac
done
failed && exit 1
exit 0
