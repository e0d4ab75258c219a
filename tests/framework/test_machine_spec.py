"""The emulated machine in a spec: throttle.topology and throttle.allocation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scaleprobe.framework.launch import launch_environment
from scaleprobe.framework.planning import plan
from scaleprobe.framework.spec import SpecError, load_spec
from scaleprobe.kernels import schema
from scaleprobe.kernels.comm.pattern import place_nodes
from scaleprobe.kernels.schema import LinkConfig, Topology


def _spec(tmp_path, throttle, **sweep):
    return {
        "name": "machine",
        "kernel": "commbench.random_pingpong",
        "params": {"iterations": 2, "warmup": 0, "msg_bytes": "64 KiB"},
        "sweep": {"nodes": [2, 4], "ppn": 1, "run": 2, **sweep},
        "throttle": {"mode": "emulated", "core_slots": 0, **throttle},
        "output": str(tmp_path / "machine.zarr"),
    }


def test_topology_and_allocation_reach_every_launch(tmp_path):
    spec = load_spec(
        _spec(
            tmp_path,
            {
                "topology": {
                    "nodes_per_switch": 4,
                    "switches_per_rack": 2,
                    "oversubscription": 2,
                    "hop_latency": "0.1 us",
                },
                "allocation": {"placement": "random", "machine_nodes": 64, "seed": 5},
            },
        )
    )
    assert spec.throttle.topology["hop_latency"] == pytest.approx(1e-7)
    assert spec.throttle.as_dict()["allocation"]["machine_nodes"] == 64
    seeds = set()
    for point in plan(spec):
        comm = json.loads(launch_environment(spec, point)["SCALEPROBE_LINK"])
        assert comm["topology"]["oversubscription"] == 2.0
        # every run of a random allocation draws its own placement
        assert comm["allocation"]["seed"] == 5 + point.coords["run"]
        seeds.add(comm["allocation"]["seed"])
    assert seeds == {5, 6}


def test_without_a_machine_the_launch_sets_none(tmp_path):
    spec = load_spec(_spec(tmp_path, {}))
    link = LinkConfig.from_env(launch_environment(spec, plan(spec)[0]))
    # the defaults: one non-blocking switch, nodes placed compactly
    assert link.topology == Topology()
    assert link.allocation == schema.Allocation()


@pytest.mark.parametrize(
    ("throttle", "key", "fragment"),
    [
        ({"topology": {"nodes_per_switch": 0}}, "throttle.topology", ">= 1"),
        ({"topology": {"racks": 2}}, "throttle.topology", "unknown key"),
        ({"topology": {"hop_latency": 2}}, "hop_latency", "needs a unit"),
        ({"allocation": "scattered"}, "throttle.allocation", "compact"),
        (
            {"allocation": {"placement": "random", "machine_nodes": 3}},
            "machine_nodes",
            "cannot hold a point of 4 nodes",
        ),
        (
            {"mode": "none", "allocation": "random"},
            "throttle.allocation",
            "needs mode 'emulated'",
        ),
    ],
)
def test_a_bad_machine_is_one_line_naming_the_key(tmp_path, throttle, key, fragment):
    with pytest.raises(SpecError, match=fragment) as error:
        load_spec(_spec(tmp_path, throttle))
    assert key in str(error.value)
    assert "\n" not in str(error.value)


@pytest.mark.mpi
def test_switch_and_rack_counts_land_in_the_dataset(tmp_path, client):
    from scaleprobe.framework import run_sweep

    spec = _spec(
        tmp_path,
        {
            "topology": {"nodes_per_switch": 2, "switches_per_rack": 2},
            "allocation": {"placement": "random", "machine_nodes": 32, "seed": 1},
        },
        nodes=[4],
    )
    ds = run_sweep(spec, client=client, progress=False)
    assert (ds.status == "ok").all()
    switches = ds.SW.squeeze().values
    for run, count in zip(ds.run.values, switches, strict=True):
        seed = 1 + int(run)
        placed = place_nodes(4, allocation="random", machine_nodes=32, seed=seed)
        assert count == len(np.unique(placed // 2))
        assert float(ds.R.sel(run=run).squeeze()) == len(np.unique(placed // 4))
    assert ds.SW.attrs["units"] == "1"
