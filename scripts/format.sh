#!/usr/bin/env bash
# Formats hearth's C and CUDA sources in place with the repository's
# .clang-format (clang-format 14, Debian's clang-format package); --check
# changes nothing, lists the files that differ and fails if any does.
# Generated tables (src/text/*_data.c, written by their gen_*.py) are left
# as their generators write them.
# Usage: scripts/format.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu' '*.cuh' | grep -v '_data\.c$')
if [ "${1:-}" = "--check" ]; then
    bad=0
    for f in "${files[@]}"; do
        if ! clang-format --style=file "$f" | cmp -s - "$f"; then
            echo "format: $f differs from .clang-format (run scripts/format.sh)"
            bad=1
        fi
    done
    exit $bad
fi
clang-format --style=file -i "${files[@]}"
