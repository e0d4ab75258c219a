"""Shared checks for rendered job scripts."""

import shutil
import subprocess

import pytest


@pytest.fixture
def bash_syntax():
    """Return a function that asserts a script parses with ``bash -n``."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")

    def check(script: str) -> None:
        result = subprocess.run(
            [bash, "-n"], input=script, text=True, capture_output=True, timeout=10
        )
        assert result.returncode == 0, result.stderr

    return check
