"""One version, from the installed distribution, in the package and the command."""

import importlib.metadata
import subprocess
import sys

import scaleprobe


def test_the_package_and_the_command_report_the_installed_version():
    installed = importlib.metadata.version("scaleprobe")
    assert scaleprobe.__version__ == installed
    out = subprocess.run(
        [sys.executable, "-m", "scaleprobe.framework.cli", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == f"scaleprobe {installed}"
