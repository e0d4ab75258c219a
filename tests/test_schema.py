"""The seam types: a link and a record cross each boundary once, validated."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import pytest
from scaleprobe.kernels.schema import (
    LINK_ENV,
    RECORD_MARKER,
    Allocation,
    LinkConfig,
    Placement,
    Record,
    RecordError,
    Topology,
)

EMULATED = LinkConfig(
    mode="emulated",
    ppn=2,
    bandwidth=25.0,
    link_bandwidth=1.25e9,
    latency=1e-6,
    core_slots=2,
    topology=Topology(nodes_per_switch=4, oversubscription=2.0),
    allocation=Allocation(placement="random", machine_nodes=64, seed=3),
)


def test_link_round_trips_through_env_dict_and_json():
    assert LinkConfig.from_env(EMULATED.to_env()) == EMULATED
    assert LinkConfig.from_dict(EMULATED.to_dict()) == EMULATED
    assert json.loads(json.dumps(EMULATED.to_dict())) == EMULATED.to_dict()
    assert set(EMULATED.to_env()) == {LINK_ENV}


def test_link_from_dict_parses_units_and_percent():
    link = LinkConfig.from_dict(
        {
            "mode": "emulated",
            "link_bandwidth": "10 Gbit/s",
            "latency": "2 us",
            "memory_bandwidth": "4 GB/s",
            "memory_latency": 0,
            "bandwidth": "12.5 %",
            "allocation": "random",
        }
    )
    assert link.link_bandwidth == 1.25e9
    assert link.latency == pytest.approx(2e-6)
    assert link.memory_bandwidth == 4e9
    assert link.memory_latency == 0.0
    assert link.effective_bandwidth == pytest.approx(1.5625e8)
    assert link.allocation.placement == "random"


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({"mode": "fast"}, "link mode: must be one of ['none', 'emulated', 'netns']"),
        ({"bandwidth": 0}, "link bandwidth: must be a number > 0 and <= 100"),
        ({"bandwidth": 150}, "link bandwidth: must be a number > 0 and <= 100"),
        ({"ppn": 0}, "link ppn: must be an integer >= 1"),
        ({"ppn": 1.5}, "link ppn: must be an integer >= 1"),
        ({"latency": "soon"}, "link latency: "),
        ({"link_bandwidth": "fast"}, "link link_bandwidth: "),
        ({"nic_sharing": "greedy"}, "link nic_sharing: must be one of"),
        ({"speed": 1}, "link: unknown key(s) ['speed']"),
        ({"topology": {"levels": 3}}, "topology: unknown key(s) ['levels']"),
        ({"allocation": {"seed": -1}}, "allocation seed: must be an integer >= 0"),
        ({"core_slots": -1}, "link core_slots: must be an integer >= 0"),
    ],
)
def test_bad_link_settings_say_what_and_what_is_allowed(mapping, message):
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        LinkConfig.from_dict(mapping)


def test_link_from_env_defaults_and_errors():
    assert LinkConfig.from_env({}) == LinkConfig()
    assert LinkConfig.from_env({LINK_ENV: "  "}).mode == "none"
    with pytest.raises(ValueError, match="not valid JSON"):
        LinkConfig.from_env({LINK_ENV: "{mode"})
    with pytest.raises(ValueError, match="must be a JSON object, got list"):
        LinkConfig.from_env({LINK_ENV: "[1]"})


def test_link_attrs_are_typed_and_mode_aware():
    attrs = EMULATED.to_attrs()
    assert attrs["link_bandwidth"] == 1.25e9
    assert attrs["latency"] == 1e-6
    assert all(isinstance(v, (str, float)) for v in attrs.values())
    back = LinkConfig.from_attrs(attrs)
    assert (back.mode, back.link_bandwidth, back.latency) == ("emulated", 1.25e9, 1e-6)
    netns = LinkConfig(mode="netns", link_bandwidth=1e9).to_attrs()
    assert "latency" not in netns
    assert netns["link_bandwidth"] == 1e9
    none = LinkConfig(mode="none").to_attrs()
    assert "link_bandwidth" not in none
    assert none["throttle_mode"] == "none"
    assert LinkConfig.from_attrs({}) is None


def test_link_attrs_of_older_stores_read_from_their_json_text():
    legacy = {"link_model": json.dumps({"mode": "emulated", "link_bandwidth": 1e8})}
    link = LinkConfig.from_attrs(legacy)
    assert (link.mode, link.link_bandwidth) == ("emulated", 1e8)
    assert LinkConfig.from_attrs({"link_model": "{broken"}) is None


def test_link_mismatch_compares_what_acts_in_the_mode():
    asked = EMULATED
    assert asked.mismatch(asked) == ""
    other = asked.at(bandwidth=50.0, latency=2e-6, ppn=1)
    message = asked.mismatch(other)
    assert "bandwidth 50 % but the point asks 25 %" in message
    assert "latency 2e-06 s but the point asks 1e-06 s" in message
    assert "1 ranks per node but the point asks 2" in message
    # netns shapes the bandwidth only: the latency is the host's
    netns = LinkConfig(mode="netns", bandwidth=50)
    assert netns.mismatch(netns.at(latency=1.0)) == ""
    assert "mode 'none'" in netns.mismatch(LinkConfig())


def test_placement_checks_ranks_and_hosts():
    seen = Placement(ranks=4, hosts=("a", "b"), ranks_per_host=(2, 2))
    assert seen.mismatch(ranks=4) == ""
    assert seen.mismatch(ranks=4, nodes=2, ppn=2) == ""
    assert "asks 4 nodes of 1 ranks" in seen.mismatch(ranks=4, nodes=4, ppn=1)
    singleton = Placement(ranks=1, hosts=("a",), ranks_per_host=(1,))
    assert "ran as 1 rank(s) but the point asks 2" in singleton.mismatch(ranks=2)
    with pytest.raises(ValueError, match="sum to 3, not to 4"):
        Placement(ranks=4, hosts=("a", "b"), ranks_per_host=(2, 1))


def test_record_round_trips_and_is_checked_against_its_point():
    record = Record(
        kernel="demo",
        metrics={"time": 1.5, "teps": float("nan"), "valid": True},
        units={"time": "s"},
        trials=[{"time": 0.5}],
        profiles={"level": {"frontier": [1, 2, 3]}},
        link=EMULATED,
        placement=Placement(ranks=4, hosts=("h",), ranks_per_host=(4,)),
        parameters={"iterations": 5, "sizes": [1, 2], "mode": "pipeline"},
    )
    assert record.metrics["teps"] is None  # not-a-number is not JSON
    stream = io.StringIO()
    line = record.emit(stream)
    assert stream.getvalue() == line + "\n"
    assert line.startswith(RECORD_MARKER)
    assert Record.parse("other output\n" + line) == record
    assert record.mismatch(link=EMULATED, ranks=4) == ""
    message = record.mismatch(link=EMULATED.at(bandwidth=10.0), ranks=2)
    assert "bandwidth 25 % but the point asks 10 %" in message
    assert "ran as 4 rank(s) but the point asks 2" in message


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        ("nothing\n", "printed no record line"),
        (f"{RECORD_MARKER}{{}}\n{RECORD_MARKER}{{}}\n", "printed 2 record lines"),
        (f"{RECORD_MARKER}{{bad\n", "not valid JSON"),
        (f'{RECORD_MARKER}{{"status": "ok"}}\n', "no 'metrics' object"),
        (f'{RECORD_MARKER}{{"metrics": {{}}, "extra": 1}}\n', "unknown key"),
        (f'{RECORD_MARKER}{{"metrics": {{"t": [1]}}}}\n', "must be a number"),
        (
            f'{RECORD_MARKER}{{"metrics": {{}}, "parameters": {{"p": {{}}}}}}\n',
            "parameter 'p' must be",
        ),
        (f'{RECORD_MARKER}{{"metrics": {{}}, "status": "done"}}\n', "status must"),
        (
            f'{RECORD_MARKER}{{"metrics": {{}}, "status": "invalid"}}\n',
            "needs a reason",
        ),
        (
            f'{RECORD_MARKER}{{"metrics": {{}}, "link": {{"mode": "x"}}}}\n',
            "record's link mode",
        ),
    ],
)
def test_malformed_records_are_refused_with_the_reason(stdout, message):
    with pytest.raises(RecordError, match=message):
        Record.parse(stdout)


def test_invalid_record_carries_its_reason():
    record = Record.invalid("commbench.pingpong", "needs at least 2 ranks, got 1")
    assert record.to_dict()["status"] == "invalid"
    assert Record.from_dict(record.to_dict()) == record


def test_schema_imports_only_the_standard_library():
    code = (
        "import sys, scaleprobe.kernels.schema as s; "
        "print(sorted(m for m in ('numpy', 'mpi4py', 'pandas', 'dask') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
