"""A sweep over templates lands in a Dataset with a ``template`` dimension."""

import numpy as np
import pytest
from scaleprobe.framework import run_sweep
from scaleprobe.kernels.subgraph import Template, count_subgraphs, erdos_renyi


@pytest.mark.mpi
@pytest.mark.slow
def test_template_sweep_dataset(tmp_path, client):
    spec = {
        "name": "subgraph-templates",
        "kernel": "subgraph",
        "params": {
            "graph": "er:300:900:2",
            "iterations": 2,
            "seed": 5,
            "mode": "pipeline",
            "compress": False,
        },
        "sweep": {"nodes": [2], "template": ["u3-1", "u5-2"]},
        "throttle": {
            "mode": "emulated",
            "link_bandwidth": "1 Gbit/s",
            "latency": "5 us",
        },
        "timeout": 120,
        "output": str(tmp_path / "subgraph.zarr"),
    }
    ds = run_sweep(spec, client, progress=False)
    assert (ds.status.values == "ok").all(), ds.error.values
    assert list(ds.template.values) == ["u3-1", "u5-2"]
    graph = erdos_renyi(300, 900, seed=2)
    for name in ("u3-1", "u5-2"):
        expected = count_subgraphs(graph, Template.by_name(name), iterations=2, seed=5)
        got = ds.estimate.sel(template=name).squeeze(drop=True)
        assert float(got.max()) == float(got.min()) == expected.estimate
    assert "subtemplate" in ds.dims
    assert "step" in ds.dims
    assert ds.comp_time_subtemplate.attrs["units"] == "s"
    per_template = ds.subtemplate_size.squeeze(drop=True)
    assert np.count_nonzero(~np.isnan(per_template.sel(template="u3-1"))) == 2
