"""`ruff check .` passes, so the README's one test command also lints the code."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ruff_command() -> list[str]:
    """The venv's ruff: the script beside this Python, else `python -m ruff`."""
    script = Path(sys.executable).with_name("ruff.exe" if sys.platform == "win32" else "ruff")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ruff"]


def test_ruff_check_passes():
    result = subprocess.run([*ruff_command(), "check", "."], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
