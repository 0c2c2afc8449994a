#!/usr/bin/env bash
# Configures and builds hearth: scripts/build.sh DIR [CMAKE OPTIONS...]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
shift || true
cmake -S "$top" -B "$top/$dir" "$@" >/dev/null
cmake --build "$top/$dir" -j"$(nproc)"
