"""The local-machine script renderer."""

import pytest
from scaleprobe.deployments import render_local_script


def test_local_script(bash_syntax):
    script = render_local_script(
        "demo.yaml",
        workers=3,
        output="out/demo.zarr",
        python_env="/work/venv",
        dashboard_address=":0",
    )
    lines = script.splitlines()
    assert ". /work/venv/bin/activate" in lines
    assert "export DASK_SCALEPROBE__CLUSTER__DASHBOARD_ADDRESS=:0" in lines
    assert "scaleprobe run demo.yaml --output out/demo.zarr --workers 3" in lines
    bash_syntax(script)


def test_local_defaults_and_errors():
    assert render_local_script("d.yaml").splitlines()[-1] == "scaleprobe run d.yaml"
    with pytest.raises(ValueError, match="workers must be a positive integer, got 0"):
        render_local_script("d.yaml", workers=0)
    with pytest.raises(ValueError, match="spec must be the path"):
        render_local_script("")
