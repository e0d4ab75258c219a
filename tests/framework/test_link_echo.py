"""Kernels echo the link model they applied; the framework checks it and labels it."""

import dataclasses
import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from scaleprobe.framework._assemble import assemble
from scaleprobe.framework._linkcheck import bandwidth_attrs, link_mismatch
from scaleprobe.framework.cli import main
from scaleprobe.framework.launch import launch_point
from scaleprobe.framework.plan import plan
from scaleprobe.framework.spec import SpecError, load_spec
from scaleprobe.kernels.record import parse_record
from scaleprobe.kernels.registry import kernel_module, kernel_names

THROTTLE = SimpleNamespace(mode="emulated", link_bandwidth=1.25e8, latency=5e-6)
APPLIED = {
    "mode": "emulated",
    "ppn": 2,
    "bandwidth": 50.0,
    "link_bandwidth": 1.25e8,
    "latency": 5e-6,
}


def test_a_matching_link_or_none_echoed_passes():
    assert link_mismatch(THROTTLE, {"bandwidth": 50, "ppn": 2}, APPLIED) == ""
    assert link_mismatch(THROTTLE, {"bandwidth": 10, "ppn": 2}, None) == ""


@pytest.mark.parametrize(
    ("change", "coords", "fragment"),
    [
        ({}, {"bandwidth": 25, "ppn": 2}, "bandwidth 50 % but the point asks 25 %"),
        ({"mode": "none"}, {"bandwidth": 50}, "throttle mode 'none' but the spec"),
        ({"latency": 1e-3}, {"bandwidth": 50}, "latency 0.001 s but the point asks"),
        ({"link_bandwidth": 1e9}, {}, "link bandwidth 1e+09 bytes/s but"),
        ({"ppn": 1}, {"bandwidth": 50, "ppn": 2}, "1 ranks per node but"),
    ],
)
def test_each_difference_is_named_on_one_line(change, coords, fragment):
    message = link_mismatch(THROTTLE, coords, {**APPLIED, **change})
    assert message.startswith("the kernel applied ")
    assert fragment in message
    assert "\n" not in message


def test_bandwidth_coordinate_carries_the_absolute_link_where_it_acts():
    results = [
        {
            "coords": {"nodes": 2, "ppn": 1, "bandwidth": bw},
            "status": "ok",
            "record": {"metrics": {"time": 1.0}},
        }
        for bw in (100, 50)
    ]
    link = {"mode": "emulated", "link_bandwidth": 1e9, "latency": 2e-6}
    campaign = {
        "sweep": {"nodes": [2], "ppn": [1], "bandwidth": [100, 50]},
        "attrs": {"throttle_mode": "emulated", "link_model": json.dumps(link)},
    }
    attrs = assemble(campaign, results)["bandwidth"].attrs
    assert (attrs["link_bandwidth"], attrs["link_bandwidth_units"]) == (1e9, "bytes/s")
    assert (attrs["latency"], attrs["latency_units"]) == (2e-6, "s")
    assert (attrs["units"], attrs["throttle_mode"]) == ("percent", "emulated")
    campaign["attrs"]["throttle_mode"] = "none"
    campaign["sweep"]["bandwidth"] = [100]
    attrs = assemble(campaign, results[:1])["bandwidth"].attrs
    assert "link_bandwidth" not in attrs
    assert "latency" not in attrs
    assert attrs["throttle_mode"] == "none"
    assert "link_bandwidth" not in bandwidth_attrs("netns", None)
    # netns shapes the bandwidth only: no latency is claimed for it.
    netns = bandwidth_attrs("netns", link)
    assert netns["link_bandwidth"] == 1e9
    assert "latency" not in netns


def test_netns_echo_is_checked_on_what_it_shapes():
    netns = SimpleNamespace(mode="netns", link_bandwidth=1.25e8, latency=5e-6)
    link = {"mode": "netns", "ppn": 1, "bandwidth": 50.0, "link_bandwidth": 1.25e8}
    assert link_mismatch(netns, {"bandwidth": 50, "ppn": 1}, link) == ""
    assert "bandwidth 50 % but the point asks 10 %" in link_mismatch(
        netns, {"bandwidth": 10, "ppn": 1}, link
    )


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["emulated", "none"])
def test_pingpong_echoes_the_link_it_applied(mpi_run, mode):
    comm = {"mode": mode, "ppn": 1, "bandwidth": 40, "link_bandwidth": "1 Gbit/s"}
    done = mpi_run(
        2,
        "-m",
        "scaleprobe.kernels.commbench.pingpong",
        "--iterations",
        "2",
        "--msg-bytes",
        "1024",
        env={"SCALEPROBE_COMM": json.dumps(comm)},
    )
    link = parse_record(done.stdout)["link"]
    if mode == "none":
        assert link == {"mode": "none", "ppn": 1}
    else:
        assert (link["mode"], link["ppn"], link["bandwidth"]) == ("emulated", 1, 40.0)
        assert link["link_bandwidth"] == pytest.approx(1.25e8)
        assert link["effective_bandwidth"] == pytest.approx(5e7)


def _pingpong(params):
    spec = load_spec(
        {
            "name": "p",
            "kernel": "commbench.pingpong",
            "params": {"iterations": 2, "msg-bytes": 1024},
            "sweep": {"nodes": [2], "ppn": [1], "bandwidth": [100]},
            "throttle": {"mode": "emulated", "core_slots": 0},
            "timeout": 60,
        }
    )
    # Built past the spec checks, which refuse a throttle flag as a kernel parameter.
    spec = dataclasses.replace(spec, params={**spec.params, **params})
    return spec, plan(spec)[0]


@pytest.mark.parametrize(
    ("where", "key", "source"),
    [
        ("params", "bandwidth-percent", "sweep.bandwidth"),
        ("params", "latency", "throttle.latency"),
        ("params", "core-slots", "throttle.core_slots"),
        ("params", "throttle", "throttle.mode"),
        ("sweep", "link_bandwidth", "throttle.link_bandwidth"),
    ],
)
def test_a_throttle_flag_as_kernel_parameter_is_refused_at_spec_load(
    where, key, source, tmp_path, capsys
):
    spec = {
        "name": "p",
        "kernel": "commbench.pingpong",
        "params": {},
        "sweep": {"nodes": [2], "bandwidth": [100]},
        "throttle": {"mode": "emulated"},
    }
    spec[where][key] = 2 if where == "params" else [1e8, 1e9]
    with pytest.raises(SpecError) as error:
        load_spec(spec)
    message = str(error.value)
    assert f"'{where}.{key}'" in message
    assert source in message
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"scaleprobe: error: {message}"
    assert len(err.splitlines()) == 1


@pytest.mark.mpi
def test_a_point_whose_kernel_applied_another_link_is_invalid():
    result = launch_point(*_pingpong({}))
    assert result["status"] == "ok", result["error"]
    assert result["record"]["link"]["bandwidth"] == 100.0
    # A parameter that overrides the throttle makes the kernel measure another link
    # than the point's coordinates say.
    result = launch_point(*_pingpong({"bandwidth-percent": 50}))
    assert result["status"] == "invalid"
    assert result["error"] == (
        "the kernel applied bandwidth 50 % but the point asks 100 %"
    )


def _sources(module: str) -> str:
    origin = Path(importlib.util.find_spec(module).origin)
    files = origin.parent.rglob("*.py") if origin.name == "__init__.py" else [origin]
    return "".join(path.read_text() for path in files)


@pytest.mark.parametrize("name", kernel_names())
def test_every_kernel_on_the_instrumented_communicator_echoes_its_link(name):
    source = _sources(kernel_module(name))
    if "InstrumentedComm" not in source:
        pytest.skip(f"{name} does not talk through the instrumented communicator")
    assert "link_record()" in source, (
        f"kernel {name!r} applies a link model but its record has no 'link'"
    )
