"""Placement under a PBS node file, with real processes on named hosts.

A PBS job is emulated on this machine: ``$PBS_NODEFILE`` names hosts that do not
exist (one line per slot, as PBS writes it), and hydra reaches them through its
``ssh`` launcher hook (``HYDRA_LAUNCHER_EXEC``), here a script that starts the
command in a UTS namespace of its own whose host name is the host's (what follows a
dot is dropped: ``pbs-a.eth0`` and ``pbs-a.ib0`` are two names of host ``pbs-a``).
Every rank then reports the host it was started on (``MPI_Get_processor_name``),
as it would on a cluster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from _system import missing
from scaleprobe.deployments import render_pbs_script
from scaleprobe.framework import open_results

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("unshare") is None or os.geteuid() != 0,
        reason=missing("root and unshare (util-linux), to give each host its name"),
    ),
]

VENV = os.path.dirname(os.path.dirname(sys.executable))
HOSTS = ["pbs-a", "pbs-b", "pbs-c", "pbs-d"]

#: hydra's ssh launcher hook: ``[-x] HOST COMMAND...``, run on HOST.
FAKE_SSH = """#!/bin/sh
[ "$1" = "-x" ] && shift
host=$1
shift
exec unshare --uts sh -c 'hostname "${0%%.*}" && exec sh -c "$1"' "$host" "$*"
"""


def _job(tmp_path, nodefile_hosts, slots):
    """The environment of an emulated PBS job whose node file names the hosts."""
    launcher = tmp_path / "fake-ssh"
    launcher.write_text(FAKE_SSH)
    launcher.chmod(0o755)
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("".join(f"{h}\n" * slots for h in nodefile_hosts))
    hydra = {
        "HYDRA_LAUNCHER": "ssh",
        "HYDRA_LAUNCHER_EXEC": str(launcher),
        # no DNS knows these hosts: an mpiexec started on one of them is reached
        # by its proxies through the loopback's address, not its host name
        "HYDRA_IFACE": "lo",
    }
    env = {
        **os.environ,
        "PBS_NODEFILE": str(nodefile),
        "PBS_JOBID": "42.pbs",
        "PBS_ENVIRONMENT": "PBS_BATCH",  # hydra would read the node file itself
        "PBS_O_WORKDIR": str(tmp_path),
        "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
    }
    return env, hydra


def _spec(tmp_path, hydra, nodes, ppn):
    spec = {
        "name": "pbs-placement",
        "kernel": "commbench.compute",
        "params": {"total_work": 20},
        "sweep": {"nodes": nodes, "ppn": ppn},
        "throttle": {"mode": "none"},
        # the ranks' launches reach the hosts as the job's own mpiexec would
        "env": hydra,
        "timeout": 180,
        "output": str(tmp_path / "out.zarr"),
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    return spec


def _points(tmp_path) -> list[dict]:
    points = [
        json.loads(p.read_text()) for p in (tmp_path / "out.points").glob("*.json")
    ]
    return [p for p in points if "coords" in p]


def _scaleprobe(tmp_path, env, *args):
    return subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "scaleprobe"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_each_rank_runs_on_the_host_its_point_names(tmp_path):
    env, hydra = _job(tmp_path, HOSTS, slots=2)
    _spec(tmp_path, hydra, nodes=[2, 4], ppn=[1, 2])
    done = _scaleprobe(tmp_path, env, "run", "spec.yaml")
    assert done.returncode == 0, done.stderr[-3000:]
    points = _points(tmp_path)
    assert len(points) == 4
    for point in points:
        nodes, ppn = point["coords"]["nodes"], point["coords"]["ppn"]
        assert point["status"] == "ok", point["error"]
        seen = point["record"]["placement"]
        # hosts as each rank saw them: the first `nodes` of the node file, ppn each
        assert seen["hosts"] == HOSTS[:nodes], point["command"]
        assert seen["ranks_per_host"] == [ppn] * nodes
        listed = ",".join(f"{host}:{ppn}" for host in HOSTS[:nodes])
        assert point["command"][1:5] == ["-hosts", listed, "-ppn", str(ppn)]


def test_a_point_that_ran_on_fewer_hosts_is_invalid(tmp_path):
    # two names of one host in the node file: the point asks two nodes, and the
    # program sees both of its ranks on one
    env, hydra = _job(tmp_path, ["pbs-a.eth0", "pbs-a.ib0"], slots=1)
    _spec(tmp_path, hydra, nodes=[2], ppn=[1])
    done = _scaleprobe(tmp_path, env, "run", "spec.yaml")
    # its one point is stored, invalid: the run measured nothing usable
    assert done.returncode == 1, done.stderr[-3000:]
    (point,) = _points(tmp_path)
    assert point["status"] == "invalid"
    assert point["error"] == (
        "the program ran 2 ranks on 1 host (pbs-a: 2) but the point asks 2 nodes of "
        "1 ranks"
    )
    assert open_results(str(tmp_path / "out.zarr")).status.item() == "invalid"


def test_the_rendered_pbs_script_keeps_dask_on_the_first_host(tmp_path, bash_syntax):
    """The job script itself, run as PBS would run it on the first host: its Dask
    ranks (3, with 2 slots a host) stay on that host, and the kernels' ranks go
    where the points say."""
    env, hydra = _job(tmp_path, HOSTS, slots=2)
    spec = _spec(tmp_path, hydra, nodes=[4], ppn=[2])
    exports = [f"export {k}={v}" for k, v in hydra.items()]
    script = render_pbs_script(
        "spec.yaml", nodes=4, ppn=2, walltime="10 min", python_env=VENV, setup=exports
    )
    bash_syntax(script)
    (tmp_path / "job.pbs").write_text(script)
    env["DASK_SCALEPROBE__CLUSTER__DASHBOARD_ADDRESS"] = ":0"
    done = subprocess.run(
        ["bash", str(tmp_path / "job.pbs")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert open_results(spec["output"]).status.item() == "ok"
    (point,) = _points(tmp_path)
    assert point["host"] == HOSTS[0]  # the Dask worker that launched it
    assert point["record"]["placement"]["hosts"] == HOSTS
    assert point["record"]["placement"]["ranks_per_host"] == [2, 2, 2, 2]
