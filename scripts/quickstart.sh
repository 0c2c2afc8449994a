#!/usr/bin/env bash
# The newcomer's first command: install, build, fetch the default model
# (SmolLM2-135M-Instruct Q4_1) and generate text from it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
prompt=${1:-"<|im_start|>user
Write a haiku about a warm hearth.<|im_end|>
<|im_start|>assistant
"}
"$top/build/hearth" run "$top/models/SmolLM2-135M-Instruct.Q4_1.gguf" "$prompt" -n 96 --temp 0.7 --seed 42
