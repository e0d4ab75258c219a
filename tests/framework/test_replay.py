"""A point's log starts with the shell line that reruns it as measured."""

import os
import subprocess

import pytest
from scaleprobe.framework import run_sweep
from scaleprobe.framework.store import ResultStore
from scaleprobe.kernels.record import parse_record

pytestmark = pytest.mark.mpi


def _rerun(line: str) -> dict:
    done = subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return parse_record(done.stdout)


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
    assert "SCALEPROBE_COMM=" in line
    assert "'SCALEPROBE_TEST_NOTE=a b'\"'\"'c'" in line  # shell-quoted

    again = _rerun(line)
    measured = stored["record"]
    assert again["link"] == measured["link"]
    assert again["link"]["bandwidth"] == 10.0
    for name in ("bytes_sent", "messages"):
        assert again["metrics"][name] == measured["metrics"][name], name
    # The critical path ends on rank 0's last receive, or on rank 1 when rank 1
    # computed longer than a latency after its last send (a loaded host): the two
    # paths differ by one message's latency, and by nothing else the link charges.
    link = measured["link"]
    for name, one_message in (
        ("cp_latency_time", link["latency"]),
        ("cp_bandwidth_time", (1 << 20) / link["effective_bandwidth"]),
    ):
        assert again["metrics"][name] == pytest.approx(
            measured["metrics"][name], abs=one_message * (1 + 1e-9)
        ), name

    # The bare argument vector, without the environment scaleprobe set, measures
    # another link: the log line is what makes the rerun faithful.
    bare = _rerun(" ".join(stored["command"]))
    assert bare["link"] != measured["link"]
