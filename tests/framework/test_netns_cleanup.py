"""Netns sweeps leave no namespace, veth, bridge, qdisc or rank behind.

After a normal run, a run whose launches fail or hang, a ``kill -9`` of the sweep in
the middle of a launch (removed by the next netns sweep), and SIGINT, SIGTERM or
SIGHUP in the middle of a launch (removed by the run itself, which says so in one
line), through the CLI a user types.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from _system import missing
from scaleprobe.framework import open_results
from scaleprobe.framework.launch import child_environment
from scaleprobe.framework.netns import netns_unavailable

UNAVAILABLE = netns_unavailable()
pytestmark = [
    pytest.mark.mpi,
    pytest.mark.slow,
    pytest.mark.skipif(UNAVAILABLE is not None, reason=missing(UNAVAILABLE)),
]
SCALEPROBE = str(Path(sys.executable).with_name("scaleprobe"))


def _environment(state: Path) -> dict:
    return dict(
        child_environment(),
        DASK_SCALEPROBE__NETNS__STATE_DIR=str(state),
        DASK_SCALEPROBE__CLUSTER__DASHBOARD_ADDRESS=":0",
    )


def _write(tmp_path: Path, name: str, **spec) -> Path:
    spec = {"name": name, "output": str(tmp_path / f"{name}.zarr"), **spec}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _traces(tag: str) -> list[str]:
    """Everything of network ``tag`` the host still has: namespaces, links, qdiscs."""
    found = []
    commands = (["ip", "netns", "list"], ["ip", "-o", "link", "show"],
                ["tc", "qdisc", "show"])  # fmt: skip
    for command in commands:
        out = subprocess.run(command, capture_output=True, text=True).stdout
        found += [f"{command[1]}: {line}" for line in out.splitlines() if tag in line]
    return found


def _tags(state: Path) -> list[str]:
    return sorted(p.stem for p in state.glob("sp*.json"))


def _ranks_inside(namespace: str) -> list[str]:
    """Pids of kernel ranks in ``namespace``.

    Only ranks: a ``tc -n`` that shapes the namespace's link before the launch is
    in it too, for a few milliseconds.
    """
    out = subprocess.run(
        ["ip", "netns", "pids", namespace], capture_output=True, text=True
    )
    ranks = []
    for pid in out.stdout.split():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                words = f.read().split(b"\0")
        except FileNotFoundError:
            continue
        if b"scaleprobe.kernels.commbench.pingpong" in words:
            ranks.append(pid)
    return ranks


def _alive(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except FileNotFoundError:
        return False


def test_failed_and_hanging_launches_leave_nothing(tmp_path):
    state = tmp_path / "state"
    spec = _write(
        tmp_path,
        "faults",
        kernel="commbench.fault",
        sweep={"nodes": [2], "behaviour": ["crash", "hang", "ok"]},
        throttle={"mode": "netns"},
        timeout=15,
    )
    tags = []
    done = subprocess.Popen(
        [SCALEPROBE, "run", str(spec), "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_environment(state),
    )
    # the network's record names it while the sweep runs
    deadline = time.time() + 120
    while not tags and done.poll() is None and time.time() < deadline:
        tags = _tags(state)
        time.sleep(0.05)
    stderr = done.communicate(timeout=300)[1]
    assert done.returncode == 0, stderr
    assert len(tags) == 1, stderr
    ds = open_results(tmp_path / "faults.zarr")
    status = ds.status.squeeze(drop=True)
    assert str(status.sel(behaviour="ok").values) == "ok"
    assert str(status.sel(behaviour="crash").values) == "failed"
    assert str(status.sel(behaviour="hang").values) == "timeout"
    assert _traces(tags[0]) == []
    assert _tags(state) == []


def test_a_sweep_killed_mid_launch_is_cleaned_by_the_next_sweep(tmp_path):
    state = tmp_path / "state"
    # about a minute of ping-pong over a 5 MB/s link: killed while its ranks run
    slow = _write(
        tmp_path,
        "slow",
        kernel="commbench.pingpong",
        params={"iterations": 200, "msg_bytes": 1048576},
        sweep={"nodes": [2], "bandwidth": [4]},
        throttle={"mode": "netns", "link_bandwidth": "1 Gbit/s"},
        timeout=600,
    )
    env = _environment(state)
    killed = subprocess.Popen(
        [SCALEPROBE, "run", str(slow), "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
    )
    ranks, tags = [], []
    try:
        deadline = time.time() + 120
        while not ranks and killed.poll() is None and time.time() < deadline:
            tags = _tags(state)
            ranks = _ranks_inside(f"{tags[0]}-n1") if tags else []
            time.sleep(0.05)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
    assert ranks, "the sweep never started its ranks in the second namespace"
    (tag,) = tags
    # the sweep's owner is dead; its network, record and remote ranks are not
    assert _traces(tag), "nothing left to clean: the kill came too late"
    assert (state / f"{tag}.json").exists()
    assert any(_alive(pid) for pid in ranks)

    quick = _write(
        tmp_path,
        "quick",
        kernel="commbench.pingpong",
        params={"iterations": 3, "msg_bytes": 65536},
        sweep={"nodes": [2], "bandwidth": [50]},
        throttle={"mode": "netns"},
        timeout=120,
    )
    done = subprocess.run(
        [SCALEPROBE, "run", str(quick), "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert (open_results(tmp_path / "quick.zarr").status.values == "ok").all()
    assert _traces(tag) == []
    assert not any(_alive(pid) for pid in ranks)
    assert sorted(p.name for p in state.iterdir()) == [".lock"]


#: Starts the command with the three signals at their defaults, as a shell in a
#: terminal does, whatever this test's own process ignores (CI runners may run it
#: with SIGINT ignored, which a child would inherit).
DEFAULT_SIGNALS = (
    "import os, signal, sys\n"
    "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):\n"
    "    signal.signal(s, signal.SIG_DFL)\n"
    "os.execv(sys.argv[1], sys.argv[1:])\n"
)


@pytest.mark.parametrize(
    "signum",
    [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
    ids=["SIGINT", "SIGTERM", "SIGHUP"],
)
def test_a_signal_mid_launch_removes_everything_and_says_so_in_one_line(
    tmp_path, signum
):
    """Ctrl-C (SIGINT to the terminal's process group), ``scancel`` or a time limit
    (SIGTERM to the run) and a closed terminal (SIGHUP to the group) mid-launch."""
    state = tmp_path / "state"
    slow = _write(
        tmp_path,
        "slow",
        kernel="commbench.pingpong",
        params={"iterations": 200, "msg_bytes": 1048576},
        sweep={"nodes": [2], "bandwidth": [4]},
        throttle={"mode": "netns", "link_bandwidth": "1 Gbit/s"},
        timeout=600,
    )
    run = subprocess.Popen(
        [sys.executable, "-c", DEFAULT_SIGNALS, SCALEPROBE, "run", str(slow),
         "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=_environment(state),
    )  # fmt: skip
    ranks, tags = [], []
    try:
        deadline = time.time() + 180
        while not ranks and run.poll() is None and time.time() < deadline:
            tags = _tags(state)
            ranks = _ranks_inside(f"{tags[0]}-n1") if tags else []
            time.sleep(0.05)
        assert ranks, "the sweep never started its ranks in the second namespace"
        if signum == signal.SIGTERM:
            os.kill(run.pid, signum)
        else:
            os.killpg(run.pid, signum)
        _, stderr = run.communicate(timeout=180)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    name = signal.Signals(signum).name
    assert run.returncode == 128 + signum, stderr
    lines = stderr.strip().splitlines()
    assert lines[-1] == (
        f"scaleprobe: interrupted by {name}; run the same command again to resume"
    ), stderr
    # before it only what the run printed while it measured: no Dask log line, no
    # traceback of the run or of its worker processes
    for line in lines[:-1]:
        assert line.startswith(("scaleprobe: Dask dashboard", "scaleprobe: sweep page",
                                "scaleprobe: warning: ")), stderr  # fmt: skip
    (tag,) = tags
    assert _traces(tag) == []  # no namespace, veth, bridge or qdisc
    assert sorted(p.name for p in state.iterdir()) == [".lock"]
    assert not any(_alive(pid) for pid in ranks)
    log = tmp_path / "slow.logs" / "dask.log"
    assert log.read_text().startswith("---- "), "Dask's log lines go to the store"
