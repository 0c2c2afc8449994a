# shellcheck shell=bash
# Sourced by bench/gpu/run.sh before it configures hearth on a GPU machine:
# makes hearth's build dependencies (PCRE2, cJSON, libcurl, OpenSSL's
# libcrypto, libmicrohttpd; pkg-config itself) available where the machine
# lacks them, from the copies bench/gpu/prepare.sh put in carry/deps, and uses
# the machine's own wherever it has them.
#
#   source bench/gpu/deps.sh CARRIED_DEPS OVERLAY
#
# OVERLAY gets: bin/pkg-config (a wrapper around the carried pkgconf, only if
# the machine has none), pc/ (a .pc file for each module the machine's
# pkg-config does not know, pointing at the carried headers), lib/ (the
# unversioned link names of those modules, and every carried shared library
# whose soname the machine's loader does not know). Exports PATH and
# PKG_CONFIG_PATH, and HEARTH_DEPS_LDFLAGS (an rpath to OVERLAY/lib, so the
# built programs find those libraries without LD_LIBRARY_PATH). Set
# HEARTH_DEPS_ALL_CARRIED=1 to use the carried copy of every module (to try
# the carried set on a machine that has them all).
hearth_deps_setup() {
    local carried=$1 overlay=$2 line mod lname soname
    [ -f "$carried/.complete" ] || { echo "deps: $carried is incomplete: run bench/gpu/prepare.sh"; return 1; }
    rm -rf "$overlay" && mkdir -p "$overlay/bin" "$overlay/pc" "$overlay/lib" "$overlay/include"
    cp -a "$carried/include/." "$overlay/include/"
    if ! command -v pkg-config >/dev/null; then
        printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$carried/lib" "$carried/bin/pkg-config" >"$overlay/bin/pkg-config"
        chmod +x "$overlay/bin/pkg-config"
        export PATH="$overlay/bin:$PATH"
        echo "deps: pkg-config: the carried pkgconf"
    fi
    # sonames the machine has
    local have
    have=$(ldconfig -p 2>/dev/null | awk '{print $1}')
    for pc in "$carried"/lib/pkgconfig/*.pc; do
        lname=$(sed -n 's/^Libs: .* -l\([^ ]*\)$/\1/p' "$pc") # "Libs: -L${libdir} -lNAME"
        mod=$(basename "$pc" .pc)
        if [ -z "${HEARTH_DEPS_ALL_CARRIED:-}" ] && pkg-config --exists "$mod"; then
            echo "deps: $mod: the machine's ($(pkg-config --modversion "$mod"))"
            continue
        fi
        sed "s|@PREFIX@|$overlay|" "$pc" >"$overlay/pc/$mod.pc"
        soname=$(cd "$carried/lib" && set -- "lib$lname".so.* && echo "$1")
        line=$(ldconfig -p 2>/dev/null | awk -v s="$soname" '$1 == s {print $NF; exit}')
        if [ -n "$line" ] && [ -z "${HEARTH_DEPS_ALL_CARRIED:-}" ]; then
            ln -sf "$line" "$overlay/lib/lib$lname.so"
            echo "deps: $mod: the carried headers, the machine's $line"
        else
            ln -sf "$soname" "$overlay/lib/lib$lname.so"
            echo "deps: $mod: carried (headers and $soname)"
        fi
    done
    # every carried library the loader does not know (the carried modules' own dependencies too)
    for soname in "$carried"/lib/*.so.*; do
        soname=$(basename "$soname")
        if [ -n "${HEARTH_DEPS_ALL_CARRIED:-}" ] || ! grep -qx "$soname" <<<"$have"; then
            cp "$carried/lib/$soname" "$overlay/lib/"
        fi
    done
    echo "deps: libraries from the carried set: $(cd "$overlay/lib" && shopt -s nullglob && echo *.so.*)"
    export PKG_CONFIG_PATH="$overlay/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    # DT_RPATH (not RUNPATH), which also serves the dependencies of the carried libraries
    export HEARTH_DEPS_LDFLAGS="-Wl,--disable-new-dtags -Wl,-rpath,$overlay/lib -Wl,-rpath-link,$overlay/lib"
}
hearth_deps_setup "$@"
