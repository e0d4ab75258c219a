"""FiM-Cal trained on small real MPI runs, scored on larger ones: prints a table.

Runs ``commbench.compute`` (a fixed amount of CPU work split over the ranks, emulated
throttle so each rank's clock is its own CPU time) at three small work sizes on 1, 2
and 4 ranks, fits :class:`scaleprobe.models.FiMCal` on the measured work-phase times
(no hardware counters on this machine: TC comes from CPU time x F), and predicts a
work size 4x the largest trained one at 8 and 16 ranks, which are then measured.

Run: ``python tests/benchmarks/bench_fim_compute.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import numpy as np
from scaleprobe.framework.launch import child_environment, resolve_mpiexec
from scaleprobe.kernels.schema import Record
from scaleprobe.models import FiMCal


def measure(ranks, work, repeats):
    times = []
    for _ in range(repeats):
        command = [
            resolve_mpiexec(),
            "-n",
            str(ranks),
            sys.executable,
            "-m",
            "scaleprobe.kernels.commbench.compute",
            "--work",
            "cache",
            "--total-work",
            str(work),
            "--throttle",
            "emulated",
        ]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=True,
            env=child_environment(),
            timeout=600,
        )
        times.append(Record.parse(done.stdout).metrics["elapsed"])
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    train = [(w, p) for w in (100, 200, 400) for p in (1, 2, 4)]
    test = [(1600, p) for p in (1, 4, 8, 16)]
    y_train = np.array([measure(p, w, args.repeats) for w, p in train])
    model = FiMCal().fit(np.array(train, dtype=float), y_train)
    y_test = np.array([measure(p, w, args.repeats) for w, p in test])
    predicted = model.predict(np.array(test, dtype=float))
    print(
        f"FiMCal alpha={model.alpha_:.4f}, TC law (cycles) = "
        f"{model.coef_[1][0]:.3g} + {model.coef_[1][1]:.3g} x work"
    )
    print(f"{'work':>6} {'ranks':>5} {'measured s':>11} {'FiM s':>9} {'error %':>8}")
    errors = []
    for (work, ranks), real, pred in zip(test, y_test, predicted, strict=True):
        errors.append(100 * abs(pred - real) / real)
        print(f"{work:>6} {ranks:>5} {real:>11.4f} {pred:>9.4f} {errors[-1]:>8.1f}")
    print(
        f"relative error: best {min(errors):.1f} %, mean {np.mean(errors):.1f} %, "
        f"worst {max(errors):.1f} %"
    )
    best_real = test[int(np.argmin(y_test))][1]
    best_pred = test[int(np.argmin(predicted))][1]
    print(f"optimal ranks: measured {best_real}, predicted {best_pred}")


if __name__ == "__main__":
    main()
