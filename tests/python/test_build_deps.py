"""A missing build dependency stops CMake (and so `pip install .`) with one
line that names it and the Debian package to install."""
import os
import subprocess

from conftest import ROOT


def configure(tmp_path, env_extra, *defs):
    env = {**os.environ, **env_extra}
    build = tmp_path / f"b{len(list(tmp_path.glob('b*')))}"
    return subprocess.run(["cmake", "-S", str(ROOT), "-B", str(build), "-DHEARTH_CUDA=OFF", *defs],
                          env=env, capture_output=True, text=True)


def test_missing_library_named_in_one_line(tmp_path):
    # pkg-config that finds no .pc files: as on a machine without the -dev packages
    res = configure(tmp_path, {"PKG_CONFIG_LIBDIR": str(tmp_path), "PKG_CONFIG_PATH": ""})
    assert res.returncode != 0
    lines = [l.strip() for l in res.stderr.splitlines() if "hearth:" in l]
    assert lines == ["hearth: libpcre2-8 not found: install it (apt install libpcre2-dev)"], res.stderr


def test_python_build_needs_no_server_libraries(tmp_path):
    # the package's configuration (pyproject.toml's defines) leaves out the
    # command, the server and the tests, so libmicrohttpd is not needed; the
    # library itself needs PCRE2, and cJSON, libcurl and libcrypto for models
    # by name (src/fetch/)
    pc = tmp_path / "pc"
    pc.mkdir()
    for module in ["libpcre2-8", "libcjson", "libcurl", "libcrypto"]:
        src = subprocess.run(["pkg-config", "--variable=pcfiledir", module], capture_output=True, text=True,
                             check=True).stdout.strip()
        (pc / f"{module}.pc").write_text(open(os.path.join(src, f"{module}.pc")).read())
    res = configure(tmp_path, {"PKG_CONFIG_LIBDIR": str(pc), "PKG_CONFIG_PATH": ""}, "-DHEARTH_PYTHON=ON",
                    "-DHEARTH_TOOLS=OFF", "-DHEARTH_BUILD_TESTS=OFF", "-DHEARTH_NODE=OFF")
    assert res.returncode == 0, res.stderr
    res = configure(tmp_path, {"PKG_CONFIG_LIBDIR": str(pc), "PKG_CONFIG_PATH": ""})
    assert "hearth: libmicrohttpd not found: install it (apt install libmicrohttpd-dev)" in res.stderr
    (pc / "libcurl.pc").unlink()
    res = configure(tmp_path, {"PKG_CONFIG_LIBDIR": str(pc), "PKG_CONFIG_PATH": ""}, "-DHEARTH_TOOLS=OFF")
    assert "hearth: libcurl not found: install it (apt install libcurl4-openssl-dev)" in res.stderr
