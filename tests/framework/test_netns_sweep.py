"""Sweeps in throttle mode netns: MPI over shaped links between 2 to 4 namespaces."""

import contextlib
import os
import sys
import warnings

import pytest
from _system import missing
from scaleprobe.framework import netns as netns_module
from scaleprobe.framework import run_sweep
from scaleprobe.framework._hostload import HOST_LOAD_LIMIT
from scaleprobe.framework._warnings import (
    LinkShortfallWarning,
    OversubscriptionWarning,
)
from scaleprobe.framework.netns import netns_unavailable

UNAVAILABLE = netns_unavailable()
pytestmark = [
    pytest.mark.mpi,
    pytest.mark.skipif(UNAVAILABLE is not None, reason=missing(UNAVAILABLE)),
]
LINK = 125e6  # 1 Gbit/s
#: How far above its rate a shaped link may carry a ping-pong's payload of 1 MiB
#: messages: the rate is set for 1500-byte frames, but veth pairs can hand htb
#: segments of up to 64 KiB (segmentation offload), with fewer headers than frames,
#: and one segment a message may pass the bucket (at most 1/(1 - 1/16) = 1.067x).
#: With 256 KiB messages that bound is 1.33x: 5.6 % over was typical on a loaded
#: host, 17 % was seen once.
OVER_RATE = 1.15


def _sharing_cores(ranks: int):
    """Expect the warning that wall-clock ranks share cores, on a host with fewer."""
    if ranks <= (os.cpu_count() or 1):
        return contextlib.nullcontext()
    return pytest.warns(OversubscriptionWarning, match="share a core")


@pytest.fixture
def networks(monkeypatch):
    """Every network a sweep opens, to check afterwards that none is left."""
    opened = []
    real = netns_module.open_network

    def recording(*args, **kwargs):
        opened.append(real(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(netns_module, "open_network", recording)
    return opened


def _sweep(spec, client):
    """Run ``spec``: the Dataset, and the sweep's warnings that a link fell short (a
    busy host carries less than the shaped rate, and the sweep says so once)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = run_sweep(spec, client, progress=False)
    short = [w for w in caught if issubclass(w.category, LinkShortfallWarning)]
    for w in caught:  # the others as they came
        if w not in short:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return ds, short


def _assert_removed(networks):
    assert len(networks) == 1
    assert networks[0].leftovers() == []


def test_pingpong_bandwidth_follows_the_shaped_link(tmp_path, client, networks):
    spec = {
        "name": "netns-pingpong",
        "kernel": "commbench.pingpong",
        "params": {"iterations": 40, "msg_bytes": 262144},
        "sweep": {"nodes": [2], "bandwidth": [4, 40]},
        "throttle": {"mode": "netns", "link_bandwidth": "1 Gbit/s"},
        "timeout": 120,
        "output": str(tmp_path / "pp.zarr"),
    }
    ds, short = _sweep(spec, client)
    _assert_removed(networks)
    assert (ds.status.values == "ok").all(), ds.error.values
    achieved = ds.achieved_bandwidth.squeeze(drop=True)
    slow = float(achieved.sel(bandwidth=4))
    assert float(achieved.sel(bandwidth=40)) > 3 * slow
    assert ds.attrs["throttle_mode"] == "netns"
    assert "no tc netem" in ds.attrs["netns_latency"]
    assert "FI_PROVIDER=tcp" in ds.attrs["netns_shaping"]
    # each point stores the rate its link was shaped to and what a probe achieved
    shaped = ds.link_shaped_rate.squeeze(drop=True)
    assert shaped.attrs["units"] == ds.link_rate.attrs["units"] == "bytes/s"
    assert shaped.sel(bandwidth=4) == pytest.approx(0.04 * LINK)
    assert shaped.sel(bandwidth=40) == pytest.approx(0.4 * LINK)
    probed = ds.link_rate.squeeze(drop=True) / shaped
    expected = int(bool((probed < 0.95).any()))  # one line per sweep
    assert len(short) == expected, [str(w.message) for w in short]
    load = float(ds.host_load.max())
    if load != load:  # NaN: launches under a second cannot tell
        pytest.skip("the host's load during the launches is unknown (each took under "
                    "a second); the +-10 % link check needs a quiet host")  # fmt: skip
    if load > HOST_LOAD_LIMIT:
        pytest.skip(
            f"host busy: other work kept {load:.2f} cores busy during the launches "
            f"(above {HOST_LOAD_LIMIT}); the +-10 % link check needs a quiet host"
        )
    # On a quiet host a shaped link delivers its rate, within 10 %.
    assert 0.9 * 0.04 * LINK < slow < 1.1 * 0.04 * LINK
    assert ((probed > 0.9) & (probed < 1.1)).all(), probed.values


def test_external_programs_are_shaped_and_failures_leave_nothing(
    tmp_path, client, networks
):
    spec = {
        "name": "netns-external",
        "kernel": "external",
        "params": {
            "command": "{mpiexec} -n {ranks} {python} -m "
            "scaleprobe.kernels.commbench.{program} --msg-bytes 1048576 --iterations 3",
            "parser": "json",
            "python": sys.executable,
        },
        "sweep": {"nodes": [2], "bandwidth": [4], "program": ["pingpong", "nosuch"]},
        "throttle": {"mode": "netns"},
        "timeout": 120,
        "output": str(tmp_path / "ext.zarr"),
    }
    ds, _ = _sweep(spec, client)
    _assert_removed(networks)
    status = ds.status.squeeze(drop=True)
    assert str(status.sel(program="pingpong").values) == "ok"
    assert str(status.sel(program="nosuch").values) == "failed"
    achieved = float(ds.achieved_bandwidth.sel(program="pingpong").squeeze())
    assert 0.5 * 0.04 * LINK < achieved < OVER_RATE * 0.04 * LINK


@pytest.mark.slow
def test_graph500_over_four_namespaces(tmp_path, client, networks):
    spec = {
        "name": "netns-g500",
        "kernel": "graph500",
        "params": {"nbfs": 2, "variant": "simple", "scale": 10},
        "sweep": {"nodes": [2, 4], "ppn": [1, 2], "bandwidth": [100]},
        "throttle": {"mode": "netns"},
        "timeout": 240,
        "output": str(tmp_path / "g500.zarr"),
    }
    with _sharing_cores(8):  # 4 nodes x 2 ranks
        ds, _ = _sweep(spec, client)
    _assert_removed(networks)
    assert networks[0].nodes == 4
    assert (ds.status.values == "ok").all(), ds.error.values
    assert (ds.valid == 1).all()
    # ranks of different nodes talk over the links, ranks of one node do not
    inter = ds.bytes_inter.squeeze(drop=True)
    assert (inter > 0).all()


REFERENCE = os.environ.get("SCALEPROBE_GRAPH500_REFERENCE", "")


@pytest.mark.slow
@pytest.mark.skipif(
    not os.access(REFERENCE, os.X_OK),
    reason="set SCALEPROBE_GRAPH500_REFERENCE to a built Graph500 reference binary",
)
def test_graph500_reference_binary_under_netns(tmp_path, client, networks):
    spec = {
        "name": "netns-reference",
        "kernel": "external",
        "params": {
            "command": "{mpiexec} -n {ranks} {binary} {scale} 16",
            "parser": "graph500",
            "binary": REFERENCE,
        },
        "sweep": {"nodes": [2, 4], "bandwidth": [10, 100], "scale": [10]},
        "throttle": {"mode": "netns"},
        "timeout": 300,
        "output": str(tmp_path / "ref.zarr"),
    }
    with _sharing_cores(4):
        ds, _ = _sweep(spec, client)
    _assert_removed(networks)
    assert (ds.status.values == "ok").all(), ds.error.values
    ranks = ds.num_mpi_processes.squeeze(drop=True)
    assert (ranks.sel(nodes=4) == 4).all()
    assert (ds.teps > 0).all()
