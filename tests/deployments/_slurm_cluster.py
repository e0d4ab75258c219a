"""A private SLURM of several nodes on this one host (munged, slurmctld, a slurmd
per node), started for the tests.

Every node is a ``slurmd`` of its own (``slurmd -N NAME``) with its own name and
port (``NodeName=NAME NodeHostname=HOST NodeAddr=127.0.0.1 Port=PORT``), so SLURM
places jobs and steps on distinct nodes although they share one machine: a task
sees its node as ``SLURMD_NODENAME`` (its processor name is the machine's).
Everything lives in one directory: a generated ``slurm.conf`` and munge key,
sockets, spool and state directories, logs. Ports are picked free, so several test
sessions on one host do not meet, and nothing under ``/etc`` is touched: clients
find the cluster through ``SLURM_CONF``. Needs the Debian packages ``slurmctld``,
``slurmd``, ``slurm-client`` and ``munge`` (``.ci/install-deploy-deps`` installs
them) and root.

Interface: ``SlurmCluster(directory, cpus=8, nodes=1)``; ``start()``, ``stop()``;
``run(*command)`` runs a SLURM client against it; ``job_state``, ``wait_job``,
``job_report``; attributes ``conf`` (for ``SLURM_CONF``), ``env``, ``names`` (the
node names, in order), ``cpus`` (per node), ``root``, ``host``.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "sinfo")

CONF = """\
ClusterName={name}
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
FirstJobId={first_job}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge.socket
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool-%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd-%n.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=600
{nodes}PartitionName=debug Nodes={names} Default=YES MaxTime=INFINITE State=UP
"""
NODE = (
    "NodeName={name} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} "
    "CPUs={cpus} RealMemory=4000 State=UNKNOWN\n"
)


def unavailable() -> str | None:
    """Why a private SLURM cannot start here, or None."""
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    if missing:
        return (
            f"SLURM is not installed ({', '.join(missing)} missing; apt-get install "
            "slurmctld slurmd slurm-client munge, as .ci/install-deploy-deps does)"
        )
    if os.geteuid() != 0:
        return "starting a private SLURM (munged, slurmctld, slurmd) needs root"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    """A SLURM in ``directory``: ``nodes`` nodes of ``cpus`` CPUs in one partition."""

    def __init__(self, directory: str, cpus: int = 8, nodes: int = 1):
        self.root = os.path.abspath(directory)
        self.cpus = cpus
        self.host = socket.gethostname().split(".")[0]
        # short names of their own, unlike any host's: a rank that reports one ran
        # where SLURM put it
        self.names = [f"spn{index}" for index in range(nodes)]
        self.conf = os.path.join(self.root, "slurm.conf")
        self.env = {**os.environ, "SLURM_CONF": self.conf}
        self.processes: list[subprocess.Popen] = []

    def _daemon(self, *command: str, log_name: str | None = None) -> None:
        name = log_name or command[0]
        log = open(os.path.join(self.root, f"{name}.out"), "w")  # noqa: SIM115
        self.processes.append(
            subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
            )
        )
        log.close()

    def start(self, timeout: float = 60) -> None:
        """Start munged, slurmctld and a slurmd per node; return when all are idle."""
        for sub in ("state", *(f"spool-{name}" for name in self.names)):
            os.makedirs(os.path.join(self.root, sub), exist_ok=True)
        key = os.path.join(self.root, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        os.chmod(self.root, 0o755)
        with open(self.conf, "w") as f:
            f.write(
                CONF.format(
                    name=f"sp{os.getpid()}",
                    host=self.host,
                    root=self.root,
                    ctld_port=_free_port(),
                    # job ids name MPICH's shared-memory segments: a fresh
                    # controller counting from 1 would meet those of a killed
                    # earlier session's jobs on this host
                    first_job=random.randrange(10_000, 50_000_000),
                    nodes="".join(
                        NODE.format(
                            name=name, host=self.host, port=_free_port(), cpus=self.cpus
                        )
                        for name in self.names
                    ),
                    names=",".join(self.names),
                )
            )
        self._daemon(
            "munged", "-F", "-f", f"--socket={self.root}/munge.socket",
            f"--key-file={key}", f"--pid-file={self.root}/munged.pid",
            f"--log-file={self.root}/munged.log",
            f"--seed-file={self.root}/munged.seed",
        )  # fmt: skip
        self._wait(lambda: os.path.exists(f"{self.root}/munge.socket"), 10, "munged")
        self._daemon("slurmctld", "-D", "-i", "-f", self.conf)
        for name in self.names:
            self._daemon(
                "slurmd", "-D", "-N", name, "-f", self.conf, log_name=f"slurmd-{name}"
            )
        self._wait(self._idle, timeout, f"{len(self.names)} idle nodes")

    def _idle(self) -> bool:
        out = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %T"],
            capture_output=True,
            text=True,
            env=self.env,
        )
        states = dict(line.split() for line in out.stdout.splitlines() if line.strip())
        return out.returncode == 0 and states == dict.fromkeys(self.names, "idle")

    def _wait(self, condition, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(
                        f"{process.args[0]} exited ({process.returncode}) before "
                        f"{what}; logs in {self.root}"
                    )
            if time.monotonic() > deadline:
                raise RuntimeError(f"no {what} after {timeout} s; logs in {self.root}")
            time.sleep(0.2)

    def run(self, *command: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """Run a SLURM client command against this cluster."""
        return subprocess.run(
            command, capture_output=True, text=True, env=self.env, timeout=timeout
        )

    def job_state(self, job: str) -> str:
        """``PENDING``, ``RUNNING``, ``COMPLETED``, ``FAILED``... of a job."""
        out = self.run("scontrol", "show", "job", job, "-o").stdout
        for field in out.split():
            if field.startswith("JobState="):
                return field.split("=", 1)[1]
        return "UNKNOWN"

    def wait_job(self, job: str, timeout: float) -> str:
        """Wait until a job has ended; return its final state.

        A job still alive after ``timeout`` is cancelled, and what it was doing (its
        steps and processes) is returned with the state.
        """
        deadline = time.monotonic() + timeout
        while (state := self.job_state(job)) in ("PENDING", "RUNNING", "CONFIGURING",
                                                 "COMPLETING"):  # fmt: skip
            if time.monotonic() > deadline:
                report = self.job_report(job)
                self.run("scancel", job)
                return f"TIMEOUT in the test ({state})\n{report}"
            time.sleep(0.5)
        return state

    def job_report(self, job: str) -> str:
        """Steps of a running job and its processes: state, CPU seconds, command."""
        lines = [self.run("scontrol", "show", "steps", job).stdout.strip()]
        tick = os.sysconf("SC_CLK_TCK")
        for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if f"SLURM_JOB_ID={job}".encode() not in f.read().split(b"\0"):
                        continue
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    command = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            cpu = (int(fields[11]) + int(fields[12])) / tick
            lines.append(f"pid {pid} {fields[0]} cpu {cpu:.1f} s: {command[:160]}")
        return "\n".join(lines)

    def stop(self) -> None:
        """Stop the daemons (slurmd first) and wait for them."""
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()
