"""Faults injected into one sweep: does anything get lost, repeated or contaminated?

One campaign of ``--runs`` x 2 points (an external MPI program on 1 and 2 ranks, a
short sleep each) is driven through every fault a sweep meets in practice, with the
command a user would type after each:

1. kernel crash and kernel hang: chosen points abort or hang on their first attempt
   (stored as ``failed`` and ``timeout``; the last step retries them);
2. ``kill -9`` of ``scaleprobe run`` (embedded cluster) in the middle of the sweep;
3. the sweep resumed on an external cluster (``dask scheduler`` + two workers without
   nanny): ``kill -9`` of the worker running a launch, then of the scheduler;
4. a stored point file truncated;
5. the disk of the output (a small tmpfs) filled while the sweep runs;
6. resume; then ``--retry failed,timeout``;
7. SIGTERM and SIGHUP of ``scaleprobe run`` in the middle of the sweep (what
   ``scancel``, a job's time limit, ``timeout`` and a closed terminal send; run after
   step 3);
8. with ``--slurm`` (a private SLURM controller, as the tests start one: Debian's
   ``slurmctld``, ``slurmd``, ``munge``, root), a second campaign of the same program
   run with ``--cluster slurm``: worker jobs of two minutes that reach the end of
   their walltime (their workers retire before it), then ``scancel`` of the worker job
   while a point runs in its allocation.

The program logs every launch's start and end, and holds an ``flock`` while it runs:
a launch that finds it taken ran at the same time as another one (a contaminated
measurement). At the end the table counts points lost (planned but not stored ok),
duplicated (more than one ``ok`` record for one point), failed by the infrastructure
(a ``failed`` or ``timeout`` record, current or in a point's history, of a point whose
program did not crash or hang by design), re-measured (launches beyond one per point)
and overlapping launches, plus launches still alive after each kill.

Needs root for the tmpfs (without it the full-disk fault is skipped and says so).

Usage: python tests/benchmarks/bench_faults.py [--runs 12] [--work 0.3] [--keep]
       [--slurm]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml
from scaleprobe.framework.launch import child_environment
from scaleprobe.framework.store import ResultStore, open_results

BIN = os.path.dirname(sys.executable)
SCALEPROBE = os.path.join(BIN, "scaleprobe")

PROGRAM = r"""
import fcntl, json, os, sys, time
plan_file, log_file, work = sys.argv[1], sys.argv[2], float(sys.argv[3])
coords = json.loads(os.environ["SCALEPROBE_POINT"])
key = f"n{coords['nodes']}r{coords['run']}"
if int(os.environ.get("PMI_RANK", os.environ.get("SLURM_PROCID", "0"))) != 0:
    time.sleep(work)
    sys.exit(0)
busy = open(log_file + ".busy", "a")
try:
    fcntl.flock(busy, fcntl.LOCK_EX | fcntl.LOCK_NB)
    overlap = False
except BlockingIOError:
    overlap = True
with open(log_file, "a+") as log:
    log.seek(0)
    attempt = 1 + sum(1 for line in log if line.split()[:2] == [key, "start"])
    log.write(f"{key} start {time.time()} {attempt} {int(overlap)}\n")
fault = json.load(open(plan_file)).get(key) if attempt == 1 else None
if fault == "crash":
    os.abort()
if fault == "hang":
    while True:
        time.sleep(3600)
time.sleep(work)
with open(log_file, "a") as log:
    log.write(f"{key} end {time.time()} {attempt}\n")
print("SCALEPROBE-RECORD " + json.dumps(
    {"metrics": {"time": work, "attempt": attempt}, "status": "ok"}), flush=True)
"""


def _alive(marker: str) -> int:
    found = subprocess.run(
        ["pgrep", "-f", "--", marker], capture_output=True, text=True
    )
    return len(found.stdout.split())


def _wait_gone(marker: str, seconds: float = 15) -> float | None:
    """Seconds until no process matches ``marker`` (None: still there after that)."""
    start = time.time()
    while time.time() - start < seconds:
        if not _alive(marker):
            return time.time() - start
        time.sleep(0.1)
    return None


def _starts(log: str) -> list[list[str]]:
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [line.split() for line in f if line.split()[1:2] == ["start"]]


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def _last_line(text: str) -> str:
    lines = [
        line
        for line in text.splitlines()
        if line.startswith(("scaleprobe: error", "scaleprobe: failed"))
        or "unmeasured" in line
    ]
    return lines[-1] if lines else "-"


class Bench:
    def __init__(
        self, folder, runs: int, work: float, disk=None, inject=True, nodes=(1, 2)
    ):
        self.folder, self.disk = folder, disk
        self.log = os.path.join(folder, "launches.log")
        self.marker = os.path.join(folder, "program.py")
        with open(self.marker, "w") as f:
            f.write(PROGRAM)
        self.points = [f"n{n}r{r}" for n in nodes for r in range(runs)]
        self.faults = {}
        if inject:
            self.faults = {self.points[1]: "crash", self.points[runs + 2]: "hang"}
            self.faults[self.points[runs + 5]] = "crash"
            self.faults[self.points[4]] = "hang"
        plan = os.path.join(folder, "faults.json")
        with open(plan, "w") as f:
            json.dump(self.faults, f)
        output = os.path.join(disk or folder, "faults.zarr")
        self.store = ResultStore(output)
        self.spec = os.path.join(folder, "spec.yaml")
        with open(self.spec, "w") as f:
            yaml.safe_dump(
                {
                    "name": "faults",
                    "kernel": "external",
                    "params": {
                        "command": "{mpiexec} -n {ranks} {python} {program} {plan} "
                        "{log} {work}",
                        "parser": "json",
                        "python": sys.executable,
                        "program": self.marker,
                        "plan": plan,
                        "log": self.log,
                        "work": work,
                    },
                    "sweep": {"nodes": list(nodes), "run": runs},
                    "throttle": {"mode": "none"},
                    "timeout": max(4, 3 * work),
                    "output": output,
                },
                f,
            )
        self.env = dict(
            child_environment(), DASK_SCALEPROBE__CLUSTER__CONNECT_TIMEOUT="20"
        )
        self.rows = []

    def stored(self) -> int:
        return len(self.store.done_keys())

    def start(self, *extra):
        return subprocess.Popen(
            [SCALEPROBE, "run", self.spec, *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
            cwd=self.folder,
        )

    def row(self, fault, injected, code, message, alive="-"):
        """One fault; ``alive``: seconds until its launches were gone, None when
        some outlived it, "-" when it kills nothing."""
        self.rows.append((fault, injected, code, message, alive))

    def finish(self, process, timeout=300) -> tuple[int, str]:
        try:
            _, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
            return -1, "hung: killed by the benchmark\n" + err
        return process.returncode, err

    # -- the faults ---------------------------------------------------------------

    def kill_the_run(self):
        run = self.start("--workers", "2")
        _wait_for(lambda: self.stored() >= 6, 300)
        os.kill(run.pid, signal.SIGKILL)
        run.communicate()
        gone = _wait_gone(self.marker)
        self.row(
            "kill -9 of scaleprobe run", 1, -9, f"{self.stored()} points stored", gone
        )

    def signal_the_run(self, signum: int):
        """SIGTERM or SIGHUP to ``scaleprobe run`` while launches run."""
        run = self.start("--workers", "2")
        count = self.stored()
        _wait_for(lambda: self.stored() >= count + 2, 300)
        os.kill(run.pid, signum)
        code, err = self.finish(run, timeout=120)
        gone = _wait_gone(self.marker)
        lines = [line for line in err.splitlines() if "interrupted" in line]
        name = signal.Signals(signum).name
        self.row(f"{name} of scaleprobe run", 1, code, (lines or ["-"])[-1][:90], gone)

    def external_cluster(self):
        scheduler_file = os.path.join(self.folder, "scheduler.json")
        dask = os.path.join(BIN, "dask")
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        scheduler = subprocess.Popen(
            [
                dask,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                scheduler_file,
            ],
            env=self.env,
            **quiet,
        )
        workers = [
            subprocess.Popen(
                [
                    dask,
                    "worker",
                    "--scheduler-file",
                    scheduler_file,
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                ],
                env=self.env,
                **quiet,
            )
            for _ in range(2)
        ]
        try:
            run = self.start("--scheduler-file", scheduler_file)
            before = len(_starts(self.log))
            _wait_for(lambda: len(_starts(self.log)) >= before + 3, 300)
            guard = subprocess.run(
                ["pgrep", "-f", "--", "_guard.py"], capture_output=True, text=True
            ).stdout.split()
            parents = set()
            for pid in guard:
                with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as f:
                    parents.add(int(f.read().split()[3]))
            victim = next((w for w in workers if w.pid in parents), workers[0])
            os.kill(victim.pid, signal.SIGKILL)
            gone = self._launch_of(victim.pid)
            self.row(
                "kill -9 of a worker", 1, "-", "its task runs on the other worker", gone
            )
            count = self.stored()
            _wait_for(lambda: self.stored() >= count + 2, 300)
            os.kill(scheduler.pid, signal.SIGKILL)
            killed = time.time()
            code, err = self.finish(run)
            gone = _wait_gone(self.marker)
            self.row(
                "kill -9 of the scheduler",
                1,
                code,
                f"{_last_line(err)} (client ended after {time.time() - killed:.1f} s)",
                gone,
            )
        finally:
            for process in [*workers, scheduler]:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                process.wait()

    def _launch_of(self, worker_pid: int) -> float | None:
        """Seconds until no guard whose parent was ``worker_pid`` is left."""
        start = time.time()
        while time.time() - start < 15:
            found = subprocess.run(
                ["pgrep", "-P", str(worker_pid)], capture_output=True, text=True
            ).stdout.split()
            orphans = subprocess.run(
                ["pgrep", "-f", "--", f"_guard.py {worker_pid} "],
                capture_output=True,
                text=True,
            ).stdout.split()
            if not found and not orphans:
                return time.time() - start
            time.sleep(0.1)
        return None

    def corrupt_a_point(self):
        key = sorted(self.store.done_keys())[0]
        path = os.path.join(self.store.points_dir, f"{key}.json")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text[: len(text) // 3])
        self.row("truncated point file", 1, "-", os.path.basename(path))

    def fill_the_disk(self):
        if self.disk is None:
            self.row("full disk", 0, "-", "skipped: mounting a tmpfs needs root")
            return
        run = self.start("--workers", "2")
        count = self.stored()
        _wait_for(lambda: self.stored() >= count + 2, 300)
        filler = os.path.join(self.disk, "filler")
        with contextlib.suppress(OSError), open(filler, "wb") as f:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        code, err = self.finish(run)
        gone = _wait_gone(self.marker)
        leftovers = [
            name
            for root, dirs, files in os.walk(self.disk)
            for name in dirs + files
            if ".tmp-" in name or ".old-" in name
        ]
        readable = open_results(self.store.path).attrs["points"]
        os.remove(filler)
        self.row(
            "full disk",
            1,
            code,
            f"{_last_line(err)} | readable: {readable} points, "
            f"leftovers: {len(leftovers)}",
            gone,
        )

    def resume(self, *extra, label="resume"):
        code, err = self.finish(self.start("--workers", "2", *extra))
        notes = [
            line for line in err.splitlines() if "warning" in line or "note" in line
        ]
        self.row(label, "-", code, "; ".join(n[:90] for n in notes) or "-")

    # -- the verdict ----------------------------------------------------------------

    def verdict(self) -> dict:
        results = {r["key"]: r for r in self.store.results()}
        ok = [r for r in results.values() if r["status"] == "ok"]
        records = [
            sum(h["status"] == "ok" for h in [r, *r.get("history", [])])
            for r in results.values()
        ]
        starts = _starts(self.log)
        infrastructure = sum(
            h["status"] != "ok" and _key(r) not in self.faults
            for r in results.values()
            for h in [r, *r.get("history", [])]
        )
        return {
            "points": len(self.points),
            "stored ok": len(ok),
            "lost": len(self.points) - len(ok),
            "duplicated": sum(n > 1 for n in records),
            "failed by the infrastructure": infrastructure,
            "launches": len(starts),
            "re-measured": len(starts) - len(self.points),
            "overlapping launches": sum(int(s[4]) for s in starts),
            "faults in the program": len(self.faults),
        }


def _jobs(slurm, name: str) -> dict[str, str]:
    """Job id -> state of every SLURM job named ``name``, ended ones too."""
    out = slurm.run("scontrol", "show", "job", "-o").stdout
    jobs = {}
    for line in out.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if fields.get("JobName") == name:
            jobs[fields["JobId"]] = fields["JobState"]
    return jobs


def _steps(slurm, job: str) -> list[str]:
    """The job's running steps other than its batch script."""
    out = slurm.run("squeue", "-h", "-s", "-j", job, "-o", "%i").stdout.split()
    return [step for step in out if not step.endswith((".batch", ".extern"))]


def _slurm_campaign(slurm, folder, name, runs, work, walltime, **settings) -> Bench:
    """A campaign of the program, no faults of its own, run by ``--cluster slurm``."""
    os.makedirs(folder)
    bench = Bench(folder, runs, work, inject=False, nodes=(1,))
    bench.env.update(
        SLURM_CONF=slurm.conf,
        DASK_JOBQUEUE__SLURM__WALLTIME=walltime,
        DASK_JOBQUEUE__SLURM__NAME=name,
        DASK_JOBQUEUE__SLURM__LOG_DIRECTORY=os.path.join(folder, "worker-logs"),
        DASK_SCALEPROBE__CLUSTER__DASHBOARD_ADDRESS=":0",
        DASK_SCALEPROBE__CLUSTER__WORKER_WAIT="240",
        DASK_DISTRIBUTED__DEPLOY__LOST_WORKER_TIMEOUT="2s",
    )
    bench.env.update({f"DASK_SCALEPROBE__{k}": str(v) for k, v in settings.items()})
    return bench


def walltime_end(slurm, folder: str) -> Bench:
    """Two-minute worker jobs, a campaign longer than one job's worker lives."""
    name = f"bf-walltime-{os.getpid()}"
    bench = _slurm_campaign(
        slurm, os.path.join(folder, "walltime"), name, 16, 5.0, "00:02:00",
        CLUSTER__SLURM__LIFETIME_MARGIN=45, CLUSTER__SLURM__LIFETIME_STAGGER=5,
    )  # fmt: skip
    code, err = bench.finish(bench.start("--cluster", "slurm"), timeout=900)
    jobs = _jobs(slurm, name)
    states = ", ".join(sorted(jobs.values()))
    bench.row(
        "walltime end of worker jobs", len(jobs), code,
        f"{_last_line(err)} | jobs: {states}", _wait_gone(bench.marker),
    )  # fmt: skip
    return bench


def allocation_end(slurm, folder: str) -> Bench:
    """``scancel`` of the only worker job while a point runs in its allocation."""
    name = f"bf-scancel-{os.getpid()}"
    bench = _slurm_campaign(
        slurm, os.path.join(folder, "scancel"), name, 6, 3.0, "00:10:00"
    )
    run = bench.start("--cluster", "slurm")
    _wait_for(lambda: bench.stored() >= 2, 300)
    job = next(iter(_jobs(slurm, name)), None)
    in_flight = job is not None and _wait_for(lambda: _steps(slurm, job), 60)
    if job is not None:
        slurm.run("scancel", job)
    code, err = bench.finish(run, timeout=600)
    bench.row(
        "allocation end (scancel mid-launch)", int(in_flight), code,
        f"{_last_line(err)} | jobs: {len(_jobs(slurm, name))}",
        _wait_gone(bench.marker),
    )  # fmt: skip
    return bench


def slurm_faults(folder: str) -> list[Bench] | str:
    """The batch system's faults, on a private SLURM controller (or why not)."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "deployments"))
    from _slurm_cluster import SlurmCluster, unavailable

    reason = unavailable()
    if reason is not None:
        return reason
    slurm = SlurmCluster(os.path.join(folder, "slurm"), cpus=8)
    slurm.start()
    try:
        return [walltime_end(slurm, folder), allocation_end(slurm, folder)]
    finally:
        slurm.stop()


def _key(result: dict) -> str:
    """The program's name of a stored point."""
    return f"n{result['coords']['nodes']}r{result['coords']['run']}"


def _mount(folder: str, size: str) -> str | None:
    if os.geteuid() != 0:
        return None
    disk = os.path.join(folder, "disk")
    os.mkdir(disk)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", disk],
        capture_output=True,
    )
    return disk if done.returncode == 0 else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=12, help="runs per node count")
    parser.add_argument("--work", type=float, default=0.3, help="seconds per launch")
    parser.add_argument("--disk", default="4m", help="size of the output's tmpfs")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument(
        "--slurm", action="store_true", help="also a private SLURM's walltime ends"
    )
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="bench-faults-")
    disk = _mount(folder, args.disk)
    bench = Bench(folder, args.runs, args.work, disk)
    started = time.time()
    try:
        bench.kill_the_run()
        bench.external_cluster()
        bench.signal_the_run(signal.SIGTERM)
        bench.signal_the_run(signal.SIGHUP)
        bench.corrupt_a_point()
        bench.fill_the_disk()
        bench.resume()
        bench.resume("--retry", "failed,timeout", label="resume --retry failed,timeout")
        verdict = bench.verdict()
        batch = slurm_faults(folder) if args.slurm else "not asked for (--slurm)"
        if not isinstance(batch, str):  # read before the folder goes
            batch = [(campaign.rows[0], campaign.verdict()) for campaign in batch]
    finally:
        if disk:
            subprocess.run(["umount", "-l", disk], check=False)
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    crashes = sum(v == "crash" for v in bench.faults.values())
    print(
        f"bench_faults: {len(bench.points)} points, {time.time() - started:.0f} s, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'fault':<34}{'injected':>9}  {'exit':>5}  {'launches alive after':>20}  what"
    )
    print(
        f"{'kernel crash (first attempt)':<34}{crashes:>9}  {'-':>5}  {'-':>20}  "
        "stored as failed, retried"
    )
    print(
        f"{'kernel hang (first attempt)':<34}{len(bench.faults) - crashes:>9}  "
        f"{'-':>5}  {'-':>20}  stored as timeout, retried"
    )
    for fault, injected, code, message, gone in bench.rows:
        alive = (
            gone
            if gone == "-"
            else ("still alive" if gone is None else f"gone in {gone:.1f} s")
        )
        print(f"{fault:<34}{injected!s:>9}  {code!s:>5}  {alive:>20}  {message}")
    print()
    for name, value in verdict.items():
        print(f"{name:<30}{value:>6}")
    verdicts = [verdict]
    print(
        f"\nbatch system (--cluster slurm): {batch if isinstance(batch, str) else ''}"
    )
    for campaign in [] if isinstance(batch, str) else batch:
        (fault, injected, code, message, gone), found = campaign
        verdicts.append(found)
        alive = "still alive" if gone is None else f"gone in {gone:.1f} s"
        print(
            f"{fault:<36}{injected!s:>4} job(s)  exit {code!s:>4}  {alive}  {message}"
        )
        print("    " + ", ".join(f"{k} {v}" for k, v in found.items()))
    bad = ("lost", "duplicated", "failed by the infrastructure")
    return 0 if all(v[k] == 0 for v in verdicts for k in bad) else 1


if __name__ == "__main__":
    sys.exit(main())
