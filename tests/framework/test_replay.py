"""A point's log starts with the shell line that reruns it as measured."""

import os
import subprocess

import pytest
from scaleprobe.framework import run_sweep
from scaleprobe.framework.store import ResultStore
from scaleprobe.kernels.schema import Record

pytestmark = pytest.mark.mpi


def _rerun(line: str) -> dict:
    done = subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return Record.parse(done.stdout).to_dict()


def test_pasting_the_first_log_line_reruns_the_point_as_measured(tmp_path, client):
    spec = {
        "name": "replay",
        "kernel": "commbench.pingpong",
        "sweep": {"nodes": [2], "ppn": 1, "bandwidth": [10]},
        "throttle": {"mode": "emulated", "latency": "200 us"},
        "env": {"SCALEPROBE_TEST_NOTE": "a b'c"},
        "timeout": 120,
        "output": str(tmp_path / "replay.zarr"),
    }
    run_sweep(spec, client, progress=False)
    store = ResultStore(spec["output"])
    (stored,) = store.results()
    assert stored["status"] == "ok"
    with open(os.path.join(store.logs_dir, f"{stored['key']}.log")) as f:
        log = f.read()
    line = log.splitlines()[0]
    assert "SCALEPROBE_LINK=" in line
    assert "'SCALEPROBE_TEST_NOTE=a b'\"'\"'c'" in line  # shell-quoted

    again = _rerun(line)
    measured = stored["record"]
    assert again["link"] == measured["link"]
    assert again["link"]["bandwidth"] == 10.0
    for name in ("bytes_sent", "messages"):
        assert again["metrics"][name] == measured["metrics"][name], name
    assert again["metrics"]["cp_bandwidth_time"] == pytest.approx(
        measured["metrics"]["cp_bandwidth_time"], rel=1e-9
    )
    # The critical path ends on rank 0's last receive, or on rank 1 when rank 1
    # computed longer than a latency after its last send (a loaded host): the two
    # paths carry the same bytes and differ by one message's latency.
    latencies = [
        run["metrics"]["cp_latency_time"] / measured["link"]["latency"]
        for run in (again, measured)
    ]
    assert all(n == pytest.approx(round(n), abs=1e-6) for n in latencies)
    assert abs(round(latencies[0]) - round(latencies[1])) <= 1

    # The bare argument vector, without the environment scaleprobe set, measures
    # another link: the log line is what makes the rerun faithful.
    bare = _rerun(" ".join(stored["command"]))
    assert bare["link"] != measured["link"]
