"""The example runs as documented, so that it cannot rot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import PYTHON_DIR, odirect_dir, subprocess_env


def test_store_and_load_example_verifies_every_chunk(tmp_path: Path):
    run = subprocess.run([sys.executable, str(PYTHON_DIR / "examples" / "store_and_load.py"), "--device",
                          str(odirect_dir(tmp_path) / "cache.img"), "--chunks", "5"],
                         env=subprocess_env(), capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout.splitlines()
    assert "lookup task 2: 5 of 6 keys found and locked" in out
    assert "load task 3: 5 loaded, 5 byte for byte equal to what was stored" in out
    assert "listener: 5 keys stored, 348160 bytes" in out  # 5 slots of 69632 bytes
    assert out[-1] == "VERIFIED"
