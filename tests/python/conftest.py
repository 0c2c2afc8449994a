"""Shared fixtures for the Python-side tests: the built `hearth` binary, the
default model, and the reference fixtures folder."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def hearth_bin():
    path = Path(os.environ.get("HEARTH_BIN", ROOT / "build" / "hearth"))
    if not path.exists():
        pytest.fail(f"{path} not found: build first (scripts/build.sh) or set HEARTH_BIN")
    return path


@pytest.fixture(scope="session")
def model_path():
    path = Path(os.environ.get("HEARTH_MODEL", ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    if not path.exists():
        pytest.skip(f"{path} not found: run scripts/fetch_model.sh")
    return path


@pytest.fixture(scope="session")
def run_hearth(hearth_bin):
    """Runs hearth with arguments; never hangs (60 s limit)."""
    def run(*args, **kw):
        return subprocess.run([str(hearth_bin), *map(str, args)], capture_output=True, timeout=60, **kw)
    return run
