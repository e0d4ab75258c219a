"""Under ``CI=true`` a test skipped for a missing system requirement fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

EXAMPLE = """
import pytest
from _system import missing

@pytest.mark.skipif(True, reason=missing("the frobnicator (apt-get install frob)"))
def test_needs_a_package():
    pass

def test_needs_a_package_in_a_fixture():
    pytest.skip(missing("the frobnicator"))

@pytest.mark.skipif(True, reason="not on this platform")
def test_skipped_for_another_reason():
    pass
"""


@pytest.mark.parametrize(
    ("ci", "outcome"),
    # a skip mark is an error at setup, a skip in the test a failure
    [("true", "1 failed, 1 skipped, 1 error"), ("", "3 skipped")],
)
def test_a_missing_requirement_is_an_error_only_in_ci(tmp_path, ci, outcome):
    # a test module of its own beside the suite's conftest.py, which holds the hook
    example = TESTS / f"test_zz_ci_example_{os.getpid()}_{bool(ci)}.py"
    example.write_text(EXAMPLE)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             str(example)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=TESTS.parent,
            env={**os.environ, "CI": ci},
        )  # fmt: skip
    finally:
        example.unlink()
    summary = done.stdout.strip().splitlines()[-1]
    assert outcome in summary, done.stdout[-2000:]
    if ci:  # another reason stays a skip
        assert "under CI=true this is an error" in done.stdout
        assert "not on this platform" in done.stdout
