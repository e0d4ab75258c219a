import json
import subprocess

import dask
import pytest
from scaleprobe.framework._hostload import MIN_SECONDS
from scaleprobe.framework.launch import build_command, launch_environment, launch_point
from scaleprobe.framework.planning import plan
from scaleprobe.framework.settings import LaunchSettings
from scaleprobe.framework.spec import load_spec

pytestmark = pytest.mark.mpi


def _point(behaviour="ok", nodes=2, ppn=1, timeout=20, **params):
    spec = load_spec(
        {
            "name": "f",
            "kernel": "commbench.fault",
            "params": {"behaviour": behaviour, **params},
            "sweep": {"nodes": [nodes], "ppn": [ppn], "bandwidth": [50]},
            "throttle": {"mode": "emulated", "core_slots": 0},
            "timeout": timeout,
        }
    )
    return spec, plan(spec)[0]


def test_command_runs_the_kernel_module_with_its_parameters():
    spec, point = _point(sleep=0.5, nodes=2, ppn=2)
    command = build_command(spec, point)
    assert command[1:3] == ["-n", "4"]
    assert command[-6:] == [
        "-m",
        "scaleprobe.kernels.commbench.fault",
        "--behaviour",
        "ok",
        "--sleep",
        "0.5",
    ]


def test_environment_is_cleaned_and_carries_the_throttle(monkeypatch):
    monkeypatch.setenv("PMI_FD", "7")
    monkeypatch.setenv("PMI_RANK", "1")
    monkeypatch.setenv("HYDRA_CONTROL_FD", "9")
    monkeypatch.setenv("MPI_LOCALRANKID", "0")
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    spec, point = _point(nodes=2, ppn=2)
    env = launch_environment(spec, point)
    assert not [k for k in env if k.startswith(("PMI_", "HYDRA_", "MPI_LOCAL"))]
    assert env["OMP_NUM_THREADS"] == "1"
    comm = json.loads(env["SCALEPROBE_LINK"])
    assert comm["mode"] == "emulated"
    assert (comm["ppn"], comm["bandwidth"]) == (2, 50.0)
    assert comm["link_bandwidth"] == pytest.approx(1.25e8)


def test_a_launch_from_an_mpi_started_process_does_not_hang(monkeypatch):
    # Variables a parent started by MPI leaks; a child mpiexec seeing them would try
    # to join the parent's job.
    monkeypatch.setenv("PMI_FD", "99")
    monkeypatch.setenv("PMI_RANK", "3")
    monkeypatch.setenv("PMI_SIZE", "4")
    monkeypatch.setenv("HYDRA_CONTROL_FD", "98")
    spec, point = _point(timeout=30)
    result = launch_point(spec, point)
    assert result["status"] == "ok", result["error"]
    assert result["record"]["metrics"]["ranks"] == 2


@pytest.mark.parametrize(
    ("behaviour", "status", "fragment"),
    [
        ("ok", "ok", ""),
        ("crash", "failed", "exit code"),
        ("exit", "failed", "exit code 3"),
        ("norecord", "failed", "no record line"),
        ("badrecord", "failed", "not valid JSON"),
        ("invalid", "invalid", "failed validation on purpose"),
    ],
)
def test_every_outcome_becomes_a_result(behaviour, status, fragment):
    spec, point = _point(behaviour)
    result = launch_point(spec, point)
    assert result["status"] == status
    assert fragment in result["error"]
    assert result["launch_time"] > 0
    # too short to tell under MIN_SECONDS of wall time (a loaded host takes longer)
    if result["launch_time"] < MIN_SECONDS:
        assert result["host_load"] is None
    else:
        assert result["host_load"] >= 0
    assert result["key"] == point.key


def test_a_hang_is_killed_with_its_whole_process_group():
    spec, point = _point("hang", nodes=2, ppn=1, timeout=2)
    result = launch_point(spec, point)
    assert result["status"] == "timeout"
    assert "timeout of 2 s" in result["error"]
    assert result["launch_time"] >= 2  # killed after, never before, its timeout
    left = subprocess.run(
        ["pgrep", "-f", "commbench.fault --behaviour hang"],
        capture_output=True,
        text=True,
    )
    assert left.stdout.strip() == ""


def test_real_nodes_are_placed_ppn_per_node(monkeypatch, tmp_path):
    import dask

    spec = load_spec(
        {
            "name": "f",
            "kernel": "commbench.fault",
            "sweep": {"nodes": [4], "ppn": [2]},
            "throttle": {"mode": "none"},
        }
    )
    point = plan(spec)[0]
    hosts = tmp_path / "hosts"
    hosts.write_text("a\nb\nc\nd\n")
    settings = LaunchSettings(mpiexec="/opt/mpich/bin/mpiexec", hostfile=str(hosts))
    command = build_command(spec, point, settings=settings)
    assert command[:7] == [
        "/opt/mpich/bin/mpiexec",
        "-n",
        "8",
        "-f",
        str(hosts),
        "-ppn",
        "2",
    ]
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    with dask.config.set({"scaleprobe.launch.launcher": "srun"}):
        command = build_command(spec, point)
    assert command[:5] == [
        "srun",
        "--mpi=pmi2",
        "--ntasks=8",
        "--nodes=4",
        "--ntasks-per-node=2",
    ]


def test_emulated_nodes_share_one_node_of_an_allocation(monkeypatch):
    spec = load_spec(
        {
            "name": "e",
            "kernel": "commbench.compute",
            "sweep": {"nodes": [4], "ppn": [2]},
            "throttle": {"mode": "emulated"},
        }
    )
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    with dask.config.set({"scaleprobe.launch.launcher": "srun"}):
        command = build_command(spec, plan(spec)[0])
    assert command[:6] == [
        "srun",
        "--mpi=pmi2",
        "--ntasks=8",
        "--nodes=1",
        "--ntasks-per-node=8",
        "--overcommit",
    ]
