"""The record seam: a launch reads a Record, checks it against its point, and the
store validates it again when it reads the point back."""

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from scaleprobe.framework._warnings import DamagedPointWarning
from scaleprobe.framework.launch import (
    _places_real_hosts,
    launch_point,
    parse_output,
    point_link,
    record_mismatch,
)
from scaleprobe.framework.planning import plan
from scaleprobe.framework.settings import LaunchSettings
from scaleprobe.framework.spec import load_spec
from scaleprobe.framework.store import ResultStore, upgrade_legacy_record
from scaleprobe.kernels.schema import Placement, Record, RecordError
from test_store import _campaign, _result


def _spec(mode="none", nodes=2, ppn=2, **extra):
    return load_spec(
        {
            "name": "r",
            "kernel": "commbench.compute",
            "sweep": {"nodes": [nodes], "ppn": [ppn]},
            "throttle": {"mode": mode},
            **extra,
        }
    )


def _settings(**changes):
    return LaunchSettings(mpiexec="/usr/bin/true", **changes)


# --------------------------------------------------------------- known answers


def test_the_rank_count_is_always_checked_where_the_record_reports_it():
    spec = _spec()
    point = plan(spec)[0]  # 2 nodes x 2 ranks
    seen = Record(metrics={"time": 1.0}, placement=Placement(ranks=3))
    for real in (False, True):
        message = record_mismatch(spec, point, seen, real_hosts=real)
        assert message.startswith("the program ran as 3 rank(s) but the point asks 4")
    assert record_mismatch(spec, point, Record(metrics={})) == ""  # none reported


def test_hosts_are_checked_only_where_the_nodes_are_real_hosts():
    spec = _spec()
    point = plan(spec)[0]
    one_host = Record(
        metrics={}, placement=Placement(ranks=4, hosts=("a",), ranks_per_host=(4,))
    )
    assert record_mismatch(spec, point, one_host, real_hosts=False) == ""
    assert record_mismatch(spec, point, one_host, real_hosts=True) == (
        "the program ran 4 ranks on 1 host (a: 4) but the point asks 2 nodes of 2 ranks"
    )
    two_hosts = Record(
        metrics={},
        placement=Placement(ranks=4, hosts=("a", "b"), ranks_per_host=(2, 2)),
    )
    assert record_mismatch(spec, point, two_hosts, real_hosts=True) == ""
    uneven = Record(
        metrics={},
        placement=Placement(ranks=4, hosts=("a", "b"), ranks_per_host=(3, 1)),
    )
    assert "(a: 3, b: 1)" in record_mismatch(spec, point, uneven, real_hosts=True)


def test_the_link_and_the_placement_are_named_together():
    spec = _spec(mode="emulated")
    point = plan(spec)[0]
    applied = point_link(spec, point).at(bandwidth=10.0)
    record = Record(metrics={}, link=applied, placement=Placement(ranks=2))
    message = record_mismatch(spec, point, record)
    assert message.startswith("the kernel applied bandwidth 10 % but the point asks")
    assert "; the program ran as 2 rank(s) but the point asks 4" in message
    same = Record(metrics={}, link=point_link(spec, point), placement=Placement(4))
    assert record_mismatch(spec, point, same) == ""


@pytest.mark.parametrize(
    ("mode", "kernel", "changes", "real"),
    [
        ("none", "commbench.compute", {"hostfile": "/hosts"}, True),
        ("none", "commbench.compute", {"launcher": "srun"}, True),
        ("none", "commbench.compute", {}, False),
        ("emulated", "commbench.compute", {"hostfile": "/hosts"}, False),
        ("emulated", "commbench.compute", {"launcher": "srun"}, False),
        # an external program is placed through {mpiexec}, hosts and all
        ("none", "{mpiexec} -n {ranks} ./p", {"hostfile": "/hosts"}, True),
        ("none", "{mpiexec} -n {ranks} ./p", {"launcher": "srun"}, True),
        ("none", "{mpiexec} -n {ranks} ./p", {}, False),
        # ... unless its command starts it with a launcher of its own
        ("none", "mpirun -np {ranks} ./p", {"hostfile": "/hosts"}, False),
    ],
)
def test_real_hosts_are_where_scaleprobe_places_the_ranks_on_them(
    mode, kernel, changes, real, monkeypatch
):
    for name in ("SLURM_JOB_ID", "PBS_NODEFILE"):
        monkeypatch.delenv(name, raising=False)
    spec = _spec(mode=mode)
    if kernel.startswith(("{", "mpirun")):
        params = {"command": kernel, "parser": "json"}
        spec = type(spec)(**{**spec.__dict__, "kernel": "external", "params": params})
    assert _places_real_hosts(spec, _settings(**changes)) is real


def test_external_parsers_may_return_a_record_or_a_dict():
    spec = load_spec(
        {
            "name": "x",
            "kernel": "external",
            "params": {
                "command": "{mpiexec} -n {ranks} ./p",
                "parser": "regex",
                "patterns": {"time": r"took (\S+) s"},
            },
            "sweep": {"nodes": [1]},
            "throttle": {"mode": "none"},
        }
    )
    record = parse_output(spec, "took 2.5 s\n")
    assert isinstance(record, Record)
    assert (record.status, record.metrics) == ("ok", {"time": 2.5})
    with pytest.raises(RecordError, match="matched nothing"):
        parse_output(spec, "nothing here\n")
    native = _spec()
    with pytest.raises(RecordError, match="no record line"):
        parse_output(native, "hello\n")


# ------------------------------------------------------------- a real launch

PROGRAM = textwrap.dedent(
    """
    import os, sys
    from scaleprobe.kernels.schema import Placement, Record
    # Each process of the launch runs this; only the first prints the record.
    if os.environ.get("PMI_RANK", "0") == "0":
        seen = int(sys.argv[1]) if sys.argv[1] != "all" else int(os.environ["PMI_SIZE"])
        Record(metrics={"time": 0.5}, placement=Placement(ranks=seen)).emit()
    """
)


def _external(tmp_path, seen):
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    spec = load_spec(
        {
            "name": "seen",
            "kernel": "external",
            "params": {
                "command": f"{{mpiexec}} -n {{ranks}} {sys.executable} {program} "
                + seen,
                "parser": "json",
            },
            "sweep": {"nodes": [2]},
            "throttle": {"mode": "none"},
            "timeout": 120,
        }
    )
    return spec, plan(spec)[0]


@pytest.mark.mpi
def test_a_program_that_saw_another_rank_count_is_invalid(tmp_path):
    result = launch_point(*_external(tmp_path, "1"))
    assert result["status"] == "invalid"
    assert result["error"].startswith(
        "the program ran as 1 rank(s) but the point asks 2"
    )
    assert result["record"]["placement"] == {
        "ranks": 1,
        "hosts": [],
        "ranks_per_host": [],
    }


@pytest.mark.mpi
def test_a_program_that_saw_its_ranks_is_ok(tmp_path):
    result = launch_point(*_external(tmp_path, "all"))
    assert result["status"] == "ok", result["error"]
    assert result["record"]["placement"]["ranks"] == 2
    assert result["record"]["metrics"] == {"time": 0.5}


# ------------------------------------------------------------------- the store


def _stored(tmp_path):
    store = ResultStore(tmp_path / "c.zarr")
    store.lock.acquire()
    store.start(_campaign())
    return store


def test_the_store_validates_a_record_again_when_it_reads_it(tmp_path):
    store = _stored(tmp_path)
    for nodes in (1, 2):
        store.write_point(_result(nodes, 100))
    damaged, kept = sorted(store.done_keys())
    path = Path(store.points_dir) / f"{damaged}.json"
    result = json.loads(path.read_text())
    result["record"]["metrics"] = {"time": [1.0, 2.0]}  # a list is no metric
    path.write_text(json.dumps(result))
    with pytest.warns(DamagedPointWarning) as caught:
        results = store.results()
    assert [r["key"] for r in results] == [kept]
    (message,) = [str(w.message) for w in caught]
    assert "its record is not a kernel record (record metrics 'time' must be" in message
    assert os.listdir(store.damaged_dir) == [f"{damaged}.json"]
    store.lock.release()


def test_a_record_stored_before_the_link_was_typed_is_still_read(tmp_path):
    store = _stored(tmp_path)
    store.write_point(_result(1, 100))
    (key,) = store.done_keys()
    path = Path(store.points_dir) / f"{key}.json"
    result = json.loads(path.read_text())
    # What kernels echoed then: the link model plus two derived values.
    result["record"]["link"] = {
        "mode": "emulated",
        "ppn": 1,
        "bandwidth": 50.0,
        "link_bandwidth": 1.25e8,
        "effective_bandwidth": 6.25e7,
        "placement": [0],
    }
    result["record"]["params"] = {"scale": 12}
    path.write_text(json.dumps(result))
    (read,) = store.results()
    assert read["record"]["parameters"] == {"scale": 12}
    assert read["record"]["link"]["bandwidth"] == 50.0
    assert "effective_bandwidth" not in read["record"]["link"]
    assert not os.path.exists(store.damaged_dir)
    store.lock.release()


def test_a_stored_record_of_the_older_shape_is_read_into_the_schema():
    old = {
        "kernel": "commbench.compute",
        "metrics": {"time": 1.0},
        "params": {"scale": 12, "validate": True},
        "link": {"mode": "none", "ppn": 2, "effective_bandwidth": 1.0},
    }
    record = Record.from_dict(upgrade_legacy_record(old))
    assert record.parameters == {"scale": 12, "validate": True}
    assert record.link.mode == "none"
    settings = {**old, "settings": old["params"]}
    del settings["params"]
    assert Record.from_dict(upgrade_legacy_record(settings)).parameters
    # anything else that is no record is still refused, with the schema's reason
    wrong = {**old, "colour": "blue"}
    with pytest.raises(RecordError, match=r"unknown key\(s\) \['colour'\]"):
        Record.from_dict(upgrade_legacy_record(wrong))
    # a launch prints a record of the schema: the older shape is refused there
    with pytest.raises(RecordError, match=r"unknown key\(s\) \['params'\]"):
        parse_output(_spec(), "SCALEPROBE-RECORD " + json.dumps(old) + "\n")
