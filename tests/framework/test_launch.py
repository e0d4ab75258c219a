import dataclasses
import json
import os
import socket
import subprocess
import sys
import time

import dask
import pytest
from scaleprobe.framework._hostload import MIN_SECONDS
from scaleprobe.framework.launch import (
    SRUN_PMI1,
    build_command,
    launch_environment,
    launch_point,
    resolve_mpiexec,
)
from scaleprobe.framework.launcher import check_launcher
from scaleprobe.framework.planning import plan
from scaleprobe.framework.settings import LaunchSettings, SettingsError
from scaleprobe.framework.sitempi import MpiImplementation
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
    assert "timeout of 2 s (spec key 'timeout')" in result["error"]
    assert result["launch_time"] >= 2  # killed after, never before, its timeout
    left = subprocess.run(
        ["pgrep", "-f", "commbench.fault --behaviour hang"],
        capture_output=True,
        text=True,
    )
    assert left.stdout.strip() == ""


def test_srun_is_given_slurms_kill_wait_to_end_its_step(monkeypatch):
    # srun ends its step on SIGTERM and waits up to KillWait for the tasks; a
    # SIGKILL before that leaves them on the nodes
    from scaleprobe.framework import launch

    monkeypatch.setattr(launch, "_slurm_kill_wait", lambda: 30.0)
    srun = LaunchSettings(mpiexec="/x/mpiexec", kill_grace=2.0, launcher="srun")
    assert launch._grace(srun) == 32.0
    hydra = LaunchSettings(mpiexec="/x/mpiexec", kill_grace=2.0, launcher="mpiexec")
    assert launch._grace(hydra) == 2.0
    patient = LaunchSettings(mpiexec="/x/mpiexec", kill_grace=60.0, launcher="srun")
    assert launch._grace(patient) == 60.0


def test_the_whole_group_not_only_its_leader_gets_the_grace(tmp_path):
    # The guard leads the group and dies at once on SIGTERM; srun, in the same
    # group, still needs its grace to end the step's tasks cleanly. The member
    # takes 3 s to end: the short grace's SIGKILL comes well before.
    from scaleprobe.framework import launch

    done, ready = tmp_path / "ended", tmp_path / "ready"
    slow = (
        f"trap 'sleep 3; echo clean > {done}; exit 0' TERM; "
        f"touch {ready}; sleep 60 & wait"
    )
    guard = os.path.join(os.path.dirname(launch.__file__), "_guard.py")

    def start():
        ready.unlink(missing_ok=True)
        process = subprocess.Popen(
            [sys.executable, "-S", guard, str(os.getpid()), "bash", "-c", slow],
            start_new_session=True,
        )
        for _ in range(600):  # the trap is set
            if ready.exists():
                return process
            time.sleep(0.05)
        raise AssertionError("the group's member never started")

    process = start()
    launch.terminate_group(process, 30.0)
    assert done.read_text() == "clean\n"  # the member ended by itself
    assert not launch._group_alive(process.pid)
    done.unlink()
    hurried = start()
    launch.terminate_group(hurried, 0.2)  # too short a grace: SIGKILL
    assert not done.exists()
    assert not launch._group_alive(hurried.pid)


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
    hosts.write_text("a\nb\nc\nd:4\ne\n")
    settings = LaunchSettings(mpiexec="/opt/mpich/bin/mpiexec", hostfile=str(hosts))
    command = build_command(spec, point, settings=settings)
    # the point's own hosts, named: never the launcher's defaults
    assert command[:7] == [
        "/opt/mpich/bin/mpiexec",
        "-hosts",
        "a:2,b:2,c:2,d:2",
        "-ppn",
        "2",
        "-n",
        "8",
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


def _none_spec(kernel="commbench.compute", nodes=2, ppn=2, **extra):
    return load_spec(
        {
            "name": "placed",
            "kernel": kernel,
            "sweep": {"nodes": [nodes], "ppn": [ppn]},
            "throttle": {"mode": "none"},
            **extra,
        }
    )


def test_a_pbs_node_file_places_each_point_on_its_own_hosts(monkeypatch, tmp_path):
    # one line per slot, as PBS writes it: the launch names the point's hosts and
    # ranks per host instead of letting hydra fill the first host's slots
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("n1\nn1\nn2\nn2\nn3\nn3\n")
    monkeypatch.setenv("PBS_NODEFILE", str(nodefile))
    spec = _none_spec(nodes=2, ppn=1)
    settings = LaunchSettings(mpiexec="/opt/mpich/bin/mpiexec")
    command = build_command(spec, plan(spec)[0], settings=settings)
    assert command[:7] == [
        "/opt/mpich/bin/mpiexec", "-hosts", "n1:1,n2:1", "-ppn", "1", "-n", "2",
    ]  # fmt: skip
    openmpi = LaunchSettings(
        mpiexec="/usr/bin/mpiexec.openmpi", mpiexec_family="openmpi"
    )
    command = build_command(spec, plan(spec)[0], settings=openmpi)
    assert command[:7] == [
        "/usr/bin/mpiexec.openmpi", "-H", "n1:1,n2:1", "--map-by", "ppr:1:node",
        "-n", "2",
    ]  # fmt: skip
    # emulated nodes stay on this host, wherever the job's other hosts are
    emulated = load_spec(
        {
            "name": "e",
            "kernel": "commbench.compute",
            "sweep": {"nodes": [3], "ppn": [2]},
            "throttle": {"mode": "emulated"},
        }
    )
    command = build_command(emulated, plan(emulated)[0], settings=settings)
    assert command[1:5] == ["-hosts", f"{socket.gethostname()}:6", "-ppn", "6"]


def test_an_external_programs_mpiexec_carries_the_placement(monkeypatch, tmp_path):
    monkeypatch.delenv("PBS_NODEFILE", raising=False)
    hosts = tmp_path / "hosts"
    hosts.write_text("a:8\nb:8\n")
    spec = _none_spec(
        kernel="external",
        params={"command": "{mpiexec} -n {ranks} ./bfs 12", "parser": "graph500"},
    )
    settings = LaunchSettings(mpiexec="/opt/mpich/bin/mpiexec", hostfile=str(hosts))
    assert build_command(spec, plan(spec)[0], settings=settings) == [
        "/opt/mpich/bin/mpiexec", "-hosts", "a:2,b:2", "-ppn", "2", "-n", "4",
        "./bfs", "12",
    ]  # fmt: skip
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    openmpi = MpiImplementation("openmpi", "Open MPI", "/usr/lib/libmpi.so.40")
    srun = LaunchSettings(mpiexec="/x/mpiexec", launcher="srun", program=openmpi)
    assert build_command(spec, plan(spec)[0], settings=srun) == [
        "srun", "--mpi=pmix", "--ntasks=4", "--nodes=2", "--ntasks-per-node=2",
        "-n", "4", "./bfs", "12",
    ]  # fmt: skip


def test_a_point_of_more_nodes_than_hosts_is_not_launched(monkeypatch, tmp_path):
    monkeypatch.delenv("PBS_NODEFILE", raising=False)
    hosts = tmp_path / "hosts"
    hosts.write_text("a\nb\n")
    spec = _none_spec(nodes=4, ppn=1)
    settings = LaunchSettings(mpiexec=resolve_mpiexec(), hostfile=str(hosts))
    result = launch_point(spec, plan(spec)[0], settings=settings)
    assert result["status"] == "failed"
    assert result["error"] == (
        f"could not launch: the point asks 4 nodes but host file {hosts} names 2 hosts"
    )
    # ... and a sweep of it is refused before anything runs
    with (
        dask.config.set({"scaleprobe.launch.hostfile": str(hosts)}),
        pytest.raises(SettingsError, match="names 2 hosts; give more hosts"),
    ):
        check_launcher(spec, LaunchSettings.from_config())


def test_open_mpi_as_root_gets_its_consent_and_mpich_nothing(monkeypatch):
    spec = _none_spec(nodes=1, ppn=2)
    point = plan(spec)[0]
    openmpi = LaunchSettings(
        mpiexec="/usr/bin/mpiexec.openmpi", mpiexec_family="openmpi"
    )
    env = launch_environment(spec, point, openmpi)
    assert ("OMPI_ALLOW_RUN_AS_ROOT" in env) is (os.geteuid() == 0)
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")  # inherited: stripped
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in launch_environment(
        spec, point, LaunchSettings(mpiexec="/opt/mpich/bin/mpiexec")
    )
    # without hosts Open MPI may start more ranks than cores, as hydra does
    assert build_command(spec, point, settings=openmpi)[:4] == [
        "/usr/bin/mpiexec.openmpi", "--oversubscribe", "-n", "2",
    ]  # fmt: skip


def test_srun_runs_the_wheels_mpich_over_ofi_tcp_and_nothing_else(monkeypatch):
    # the rule's known answers; tests/deployments/test_slurm_wheel_pmi.py runs the steps
    for name in SRUN_PMI1:
        monkeypatch.delenv(name, raising=False)
    spec = _none_spec(nodes=4, ppn=1)
    point = plan(spec)[0]
    wheel = check_launcher(spec, LaunchSettings.from_config()).program
    srun = LaunchSettings(mpiexec="/x/mpiexec", launcher="srun", program=wheel)
    env = launch_environment(spec, point, srun)
    assert {name: env.get(name) for name in SRUN_PMI1} == SRUN_PMI1
    # hydra's PMI takes any value: the wheel keeps its own transport there
    hydra = dataclasses.replace(srun, launcher="mpiexec")
    assert not set(SRUN_PMI1) & set(launch_environment(spec, point, hydra))
    # another MPI (a site MPICH with SLURM's PMI-2) keeps its own
    site_mpich = MpiImplementation("mpich", "MPICH", "/opt/mpich/lib/libmpi.so.12")
    site = dataclasses.replace(srun, program=site_mpich)
    assert not set(SRUN_PMI1) & set(launch_environment(spec, point, site))
    # the spec's env has the last word
    chosen = _none_spec(nodes=4, ppn=1, env={"MPIR_CVAR_CH4_NETMOD": "ucx"})
    env = launch_environment(chosen, plan(chosen)[0], srun)
    assert (env["MPIR_CVAR_CH4_NETMOD"], env["FI_PROVIDER"]) == ("ucx", "tcp")


def test_the_launching_processs_slurm_node_is_not_the_ranks(monkeypatch):
    monkeypatch.setenv("SLURMD_NODENAME", "n7")
    spec = _none_spec(nodes=1, ppn=2)
    assert "SLURMD_NODENAME" not in launch_environment(spec, plan(spec)[0])


def _environment_sweep(tmp_path, name, env=None):
    # a leading 0: an unset variable reads 0 (braces are the command's placeholders)
    report = "t=1 trim=0$MALLOC_TRIM_THRESHOLD_ threads=0$OMP_NUM_THREADS"
    return {
        "name": name,
        "kernel": "external",
        "params": {
            "command": "{mpiexec} -n {ranks} sh -c "
            f'\'[ "$PMI_RANK" = 0 ] || exit 0; echo "{report}"\'',
            "parser": "regex",
            "patterns": {
                "time": r"t=(\S+)",
                "trim": r"trim=(\S+)",
                "threads": r"threads=(\S+)",
            },
        },
        "sweep": {"nodes": [2]},
        "throttle": {"mode": "none"},
        "env": env or {},
        "timeout": 30,
        "output": str(tmp_path / f"{name}.zarr"),
    }


def test_ranks_launched_from_a_nanny_worker_get_no_dask_tuning(tmp_path, client):
    # A Nanny sets MALLOC_TRIM_THRESHOLD_=65536 in its worker, for the worker: in a
    # rank it turns off glibc's adaptive mmap threshold (NPB EP class S: 0.43 s of
    # CPU for 0.16). The session cluster's workers are Nanny-spawned.
    from scaleprobe.framework import run_sweep

    seen = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert set(seen.values()) == {"65536"}
    ds = run_sweep(_environment_sweep(tmp_path, "nanny"), client, progress=False)
    assert (ds.status.values == "ok").all(), ds.error.values
    assert float(ds.trim.squeeze()) == 0.0
    assert float(ds.threads.squeeze()) == 1.0
    # what the spec asks for, the ranks get
    kept = _environment_sweep(tmp_path, "kept", {"MALLOC_TRIM_THRESHOLD_": "65536"})
    ds = run_sweep(kept, client, progress=False)
    assert float(ds.trim.squeeze()) == 65536.0


def test_only_values_the_nanny_set_are_removed():
    from scaleprobe.framework.launch import (
        NANNY_PROCESS,
        child_environment,
        nanny_variables,
    )

    nanny = nanny_variables(NANNY_PROCESS)
    assert nanny["MALLOC_TRIM_THRESHOLD_"] == "65536"
    assert nanny_variables("MainProcess") == {}
    environ = {"MALLOC_TRIM_THRESHOLD_": "65536", "PYTHONHASHSEED": "6640", "A": "1"}
    env = child_environment(2, environ, nanny=nanny)
    assert env["A"] == "1"
    assert env["OMP_NUM_THREADS"] == "2"  # the threads are scaleprobe's to set
    assert not env.keys() & {"MALLOC_TRIM_THRESHOLD_", "PYTHONHASHSEED"}
    # a value of the user's own, not the Nanny's, stays; outside a Nanny all stay
    mine = dict(environ, MALLOC_TRIM_THRESHOLD_="1048576")
    kept = child_environment(1, mine, nanny=nanny)
    assert kept["MALLOC_TRIM_THRESHOLD_"] == "1048576"
    assert child_environment(1, environ, nanny={})["PYTHONHASHSEED"] == "6640"
