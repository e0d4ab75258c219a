"""Reference Graph500 output blocks, from an external command, land in the Dataset."""

import os

import pytest
from scaleprobe.framework import run_sweep

DATA = os.path.join(os.path.dirname(__file__), "..", "kernels", "data")


@pytest.mark.mpi
def test_reference_outputs_are_parsed_into_the_dataset(tmp_path, client):
    spec = {
        "name": "reference-blocks",
        "kernel": "external",
        "params": {
            # The outputs are of 2-rank runs: replay each at a 2-rank point, printed
            # by the first rank only.
            "command": "{mpiexec} -n {ranks} sh -c "
            "'[ \"$PMI_RANK\" = 0 ] || exit 0; cat {data}/{output}'",
            "parser": "graph500",
            "data": os.path.abspath(DATA),
        },
        "sweep": {
            "nodes": [2],
            "output": [
                "graph500_3.0_scale12_np2.txt",
                "graph500_2.1_simple_scale12_np2.txt",
            ],
        },
        "throttle": {"mode": "none"},
        "timeout": 30,
        "output": str(tmp_path / "ref.zarr"),
    }
    ds = run_sweep(spec, client, progress=False)
    assert (ds.status.values == "ok").all(), ds.error.values
    teps = ds.teps.squeeze(drop=True)
    time = ds.time.squeeze(drop=True)
    assert (teps > 1e5).all()
    assert (time > 0).all()
    assert "units" in ds.teps.attrs
