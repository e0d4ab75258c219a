"""Kernels echo the link model they applied; the framework checks it and labels it."""

import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest
import yaml
from scaleprobe.framework._assemble import assemble
from scaleprobe.framework.cli import main
from scaleprobe.framework.launch import (
    launch_environment,
    launch_point,
    point_link,
    spec_link,
)
from scaleprobe.framework.planning import plan
from scaleprobe.framework.spec import SpecError, load_spec
from scaleprobe.kernels.registry import kernel_module, kernel_names
from scaleprobe.kernels.schema import LinkConfig, Record


def _spec(mode="emulated", **throttle):
    return load_spec(
        {
            "name": "p",
            "kernel": "commbench.pingpong",
            "sweep": {"nodes": [2], "ppn": [2], "bandwidth": [50, 25]},
            "throttle": {"mode": mode, **throttle},
        }
    )


def test_the_point_link_is_the_spec_link_at_the_points_coordinates():
    spec = _spec(link_bandwidth="1 Gbit/s", allocation={"placement": "random"})
    point = plan(spec)[0]
    link = point_link(spec, point)
    assert (link.ppn, link.bandwidth) == (2, float(point.coords["bandwidth"]))
    assert link == spec_link(spec).at(ppn=2, bandwidth=link.bandwidth)
    # the launch carries it as its one environment variable, and it comes back
    env = launch_environment(spec, point)
    assert LinkConfig.from_env(env) == link


def test_a_random_allocation_draws_anew_every_run():
    spec = load_spec(
        {
            "name": "p",
            "kernel": "commbench.pingpong",
            "sweep": {"nodes": [2], "run": 2},
            "throttle": {"mode": "emulated", "allocation": {"placement": "random"}},
        }
    )
    seeds = sorted(point_link(spec, p).allocation.seed for p in plan(spec))
    assert seeds == [0, 1]


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"bandwidth": 25.0}, "bandwidth 25 % but the point asks 50 %"),
        ({"mode": "none"}, "throttle mode 'none' but the point asks 'emulated'"),
        ({"latency": 1e-3}, "latency 0.001 s but the point asks"),
        ({"link_bandwidth": 1e9}, "link bandwidth 1e+09 bytes/s but"),
        ({"ppn": 1}, "1 ranks per node but the point asks 2"),
    ],
)
def test_each_difference_is_named_on_one_line(change, fragment):
    spec = _spec()
    asked = point_link(spec, plan(spec)[0])
    message = asked.mismatch(asked.at(**change))
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
    link = LinkConfig(mode="emulated", link_bandwidth=1e9, latency=2e-6)
    campaign = {
        "sweep": {"nodes": [2], "ppn": [1], "bandwidth": [100, 50]},
        "link": link.to_dict(),
        "attrs": {"throttle_mode": "emulated"},
    }
    attrs = assemble(campaign, results)["bandwidth"].attrs
    assert (attrs["link_bandwidth"], attrs["link_bandwidth_units"]) == (1e9, "bytes/s")
    assert (attrs["latency"], attrs["latency_units"]) == (2e-6, "s")
    assert (attrs["units"], attrs["throttle_mode"]) == ("percent", "emulated")
    assert LinkConfig.from_attrs(attrs).link_bandwidth == 1e9
    campaign["link"] = LinkConfig(mode="none").to_dict()
    campaign["sweep"]["bandwidth"] = [100]
    attrs = assemble(campaign, results[:1])["bandwidth"].attrs
    assert "link_bandwidth" not in attrs
    assert "latency" not in attrs
    assert attrs["throttle_mode"] == "none"
    # netns shapes the bandwidth only: no latency is claimed for it.
    campaign["link"] = link.at(mode="netns").to_dict()
    netns = assemble(campaign, results[:1])["bandwidth"].attrs
    assert netns["link_bandwidth"] == 1e9
    assert "latency" not in netns


def test_stores_written_before_the_link_was_typed_still_label_it():
    results = [
        {
            "coords": {"nodes": 2, "ppn": 1, "bandwidth": 100},
            "status": "ok",
            "record": {"metrics": {"time": 1.0}},
        }
    ]
    old = {"mode": "emulated", "link_bandwidth": 1e9, "latency": 2e-6}
    campaign = {
        "sweep": {"nodes": [2], "ppn": [1], "bandwidth": [100]},
        "attrs": {"throttle_mode": "emulated", "link_model": json.dumps(old)},
    }
    attrs = assemble(campaign, results)["bandwidth"].attrs
    assert (attrs["link_bandwidth"], attrs["latency"]) == (1e9, 2e-6)


def test_netns_echo_is_checked_on_what_it_shapes():
    netns = LinkConfig(mode="netns", bandwidth=50.0)
    assert netns.mismatch(netns.at(latency=1.0)) == ""
    assert "bandwidth 50 % but the point asks 10 %" in netns.at(
        bandwidth=10.0
    ).mismatch(netns)


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
        env={"SCALEPROBE_LINK": json.dumps(comm)},
    )
    link = Record.parse(done.stdout).link
    asked = LinkConfig.from_dict(comm)
    assert (link.mode, link.ppn, link.bandwidth) == (mode, 1, 40.0)
    assert link.effective_bandwidth == pytest.approx(5e7)
    assert asked.mismatch(link) == ""


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


def _echoes_link(source: str) -> bool:
    """Whether a kernel's record carries its link: the kernel asks for it, or it is a
    declaration run by the kernel harness, which asks for it for every kernel."""
    if "link_record()" in source:
        return True
    harness = importlib.util.find_spec("scaleprobe.kernels.harness")
    return (
        harness is not None
        and "KernelDeclaration(" in source
        and "link_record()" in Path(harness.origin).read_text()
    )


@pytest.mark.parametrize("name", kernel_names())
def test_every_kernel_on_the_instrumented_communicator_echoes_its_link(name):
    source = _sources(kernel_module(name))
    if "InstrumentedComm" not in source:
        pytest.skip(f"{name} does not talk through the instrumented communicator")
    assert _echoes_link(source), (
        f"kernel {name!r} applies a link model but its record has no 'link'"
    )
