#!/usr/bin/env bash
# Fills bench/gpu/carry/ (ignored by git), what bench/gpu/run.sh needs on a GPU
# machine that has no network, run HERE (with PyPI and the Debian mirror):
#   llama.cpp.tar.xz  llama.cpp's source from the llama-cpp-python sdist
#                     (bench/llama_cpp_source.sh), trimmed to what a CUDA build
#                     of llama-bench and llama-server needs (no docs, models,
#                     tests, examples, other backends, web UI)
#   wheels/           gguf (gguf-py, pure Python; numpy, pyyaml and tqdm are on
#                     the machine already)
#   deps/             hearth's build dependencies for a machine without them:
#                     the headers of PCRE2, cJSON, libcurl, OpenSSL and
#                     libmicrohttpd (Debian -dev packages), their shared
#                     libraries with everything they load (not glibc), relocatable
#                     pkg-config files, and pkgconf itself; run.sh uses a piece
#                     only where the machine lacks it
# A second run only fills what is missing; `prepare.sh --clean` starts over.
# Prints the folder and its size (the working tree plus it must stay under 64 MiB).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
carry="$top/bench/gpu/carry"
[ "${1:-}" = --clean ] && rm -rf "$carry"
mkdir -p "$carry/wheels" "$carry/deps"

# --- llama.cpp source, trimmed ---
if [ ! -f "$carry/llama.cpp.tar.xz" ]; then
    src=$("$top/bench/llama_cpp_source.sh")
    echo "trimming $src" >&2
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    cp -a "$src" "$tmp/llama.cpp"
    t="$tmp/llama.cpp"
    rm -rf "${t:?}"/{docs,models,tests,examples,pocs,media,benches,gguf-py,conversion,app,skills,grammars,requirements,ci,.github,.git}
    # scripts/: only what llama-server's build runs (its UI asset step)
    find "$t/scripts" -mindepth 1 ! -name ui-assets.cmake -exec rm -rf {} +
    rm -f "$t"/*.py "$t"/*.md "$t"/Makefile "$t"/flake.nix "$t"/*.toml "$t"/*.ini
    # ggml: the CPU and CUDA backends only (ggml_add_backend adds a folder only when its option is on)
    for d in "$t"/ggml/src/ggml-*/; do
        case "$(basename "$d")" in ggml-cpu|ggml-cuda) ;; *) rm -rf "$d" ;; esac
    done
    # the web UI's sources (LLAMA_BUILD_UI=OFF: only its CMakeLists.txt and the templates of ui.cpp/ui.h are read)
    find "$t/tools/ui" -mindepth 1 -maxdepth 1 ! -name CMakeLists.txt ! -name "*.in" -exec rm -rf {} +
    tar -C "$tmp" -cJf "$carry/llama.cpp.tar.xz" llama.cpp
    rm -rf "$tmp"
    trap - EXIT
fi

# --- gguf wheel ---
if ! ls "$carry"/wheels/gguf-*.whl >/dev/null 2>&1; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$carry/wheels" "gguf==0.19.0"
fi

# --- hearth's build dependencies ---
# Modules hearth's CMakeLists.txt asks pkg-config for, and the Debian package of each.
modules="libpcre2-8:libpcre2-dev libcjson:libcjson-dev libcurl:libcurl4-openssl-dev libcrypto:libssl-dev libmicrohttpd:libmicrohttpd-dev"
deps="$carry/deps"
if [ ! -f "$deps/.complete" ]; then
    rm -rf "$deps" && mkdir -p "$deps/include" "$deps/lib/pkgconfig" "$deps/bin"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    debs=$(for m in $modules; do echo "${m#*:}"; done)
    (cd "$tmp" && apt-get download $debs pkgconf pkgconf-bin libpkgconf3 >&2)
    for f in "$tmp"/*.deb; do dpkg -x "$f" "$tmp/root"; done
    cp -a "$tmp/root/usr/include/." "$deps/include/"
    # pkgconf (the pkg-config command) and the library it loads
    cp "$tmp/root/usr/bin/pkgconf" "$deps/bin/pkg-config"
    # the shared libraries: each module's, then everything they load, by soname,
    # except glibc's own and the C++/gcc runtime every machine with nvcc has
    libs=$(ls "$tmp"/root/usr/lib/x86_64-linux-gnu/libpkgconf.so.* | head -1)
    for m in $modules; do
        mod=${m%%:*}
        lib=$(pkg-config --variable=libdir "$mod")/$(pkg-config --libs-only-l "$mod" | sed 's/^-l\([^ ]*\).*/lib\1.so/')
        libs="$libs $(readlink -f "$lib")"
    done
    for l in $libs; do
        soname=$(objdump -p "$l" | awk '/SONAME/ {print $2}')
        cp -L "$l" "$deps/lib/$soname"
        ldd "$l" | awk '/=> \// {print $1, $3}' | while read -r name path; do
            case "$name" in
                libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
                *) [ -e "$deps/lib/$name" ] || cp -L "$path" "$deps/lib/$name" ;;
            esac
        done
    done
    # relocatable .pc files: run.sh writes the real prefix in for @PREFIX@
    for m in $modules; do
        mod=${m%%:*}
        lname=$(pkg-config --libs-only-l "$mod" | sed 's/^-l\([^ ]*\).*/\1/')
        printf 'prefix=@PREFIX@\nincludedir=${prefix}/include\nlibdir=${prefix}/lib\n\nName: %s\nDescription: %s (carried by bench/gpu/prepare.sh)\nVersion: %s\nLibs: -L${libdir} -l%s\nCflags: -I${includedir} -I${includedir}/x86_64-linux-gnu -I${includedir}/cjson\n' \
            "$mod" "$mod" "$(pkg-config --modversion "$mod")" "$lname" >"$deps/lib/pkgconfig/$mod.pc"
    done
    rm -rf "$tmp"
    trap - EXIT
    touch "$deps/.complete"
fi

# the commit the GPU run builds (the device has no .git): refreshed on every run
{ git -C "$top" describe --always --dirty 2>/dev/null || echo unknown; } >"$carry/commit"

echo "$carry"
du -sh "$carry"/* | sed 's/^/  /'
tree=$(git -C "$top" ls-files -z --cached --others --exclude-standard | (cd "$top" && xargs -0 du -cb 2>/dev/null) | awk '/\ttotal$/ {n += $1} END {print n}')
size=$(du -sb "$carry" | cut -f1)
echo "travels: working tree (tracked and untracked, not ignored) $tree bytes + carry $size bytes = $((tree + size)) of 67108864"
[ $((tree + size)) -lt 67108864 ] || { echo "too large for the device tool: remove untracked files or carry less" >&2; exit 1; }
