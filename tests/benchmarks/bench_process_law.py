"""How well FiM-Cal's ``process_law="cv"`` finds a known growth of the cycles in noise.

Total cycles of three sizes on 1, 2 and 4 processes, three runs of every point, are
drawn from a known law (no growth; a part every added process repeats, small to
large; a loss growing with log2 of the processes) with log-normal noise of each run,
as measured programs scatter (NPB CG's class-B runs: 5 % about their median on
average, 11 % on 2 ranks). For every law and noise level the table gives how often
``"cv"`` took each law over the seeds, and the absolute log error of the cycles it
predicts for the largest size on 32 and 1024 processes (median, mean, worst); then
how often that prediction lies within 10 % of the truth at 1024 processes, and how
often the range of the laws the hold-out cannot reject and of the central 90 % of
their refits on resampled residuals does
(:meth:`~scaleprobe.models.FiMCal.predict_range`, the range within 10 %), with the
median ratio of its ends there: how much the data can tell at 1024 processes. A
change to the selection rule is judged here and on measured records
(``bench_fim_table4.py --report-only``), never on one of them alone.

Run: ``python tests/benchmarks/bench_process_law.py`` (about 40 s for 20 seeds).
"""

from __future__ import annotations

import argparse

import numpy as np
from scaleprobe.models.fim.cal import FiMCal
from scaleprobe.models.fim.markov import calculation_time

F = 2e9
SIZES = np.repeat([1e5, 2e5, 4e5], 9)
PROCS = np.tile([1, 2, 4], 9)
LARGE = 4e6
AT = np.array([32.0, 1024.0])


def _one(size):
    return 1e6 + 80.0 * size


#: name -> total cycles(size, processes)
TRUTHS = {
    "constant": lambda x, q: _one(x) + 0.0 * q,
    "replicated 3x": lambda x, q: _one(x) + (q - 1) * (2e5 + 3.0 * x),
    "replicated 10x": lambda x, q: _one(x) + (q - 1) * (2e5 + 10.0 * x),
    "replicated 30x": lambda x, q: _one(x) + (q - 1) * (2e5 + 30.0 * x),
    "contention 0.10": lambda x, q: _one(x) * (1 + 0.10 * np.log2(q)),
    "contention 0.25": lambda x, q: _one(x) * (1 + 0.25 * np.log2(q)),
}


def _fit(total):
    """FiM-Cal (``process_law="cv"``) on the Markov model's times of ``total``."""
    hardware = np.column_stack([1 - 1 / total, total, np.zeros(len(total))])
    seconds = [
        calculation_time(1 - 1 / c, c, 0.0, F, int(t))
        for c, t in zip(total, PROCS, strict=True)
    ]
    model = FiMCal(frequency=F)
    return model.fit(np.column_stack([SIZES, PROCS]), np.array(seconds), hardware)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="draws per row")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument(
        "--noise", default="0.03,0.06,0.10", help="log-normal sigma of a run"
    )
    args = parser.parse_args()
    noises = [float(v) for v in args.noise.split(",")]
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    print(
        f"{'truth':16s} {'noise':>5s}  {'laws taken (const/repl/cont)':>28s}"
        f"  {'32: median':>10s} {'mean':>6s} {'worst':>6s}"
        f"  {'1024: median':>12s} {'worst':>6s}"
        f"  {'point ok':>8s} {'range ok':>8s} {'ratio':>6s}"
    )
    means = []
    for name, truth in TRUTHS.items():
        for sigma in noises:
            taken = {"constant": 0, "replicated": 0, "contention": 0}
            errors, held, ratios = [], [], []
            for seed in seeds:
                noise = np.random.default_rng(seed).lognormal(0.0, sigma, SIZES.size)
                model = _fit(truth(SIZES, PROCS) * noise)
                taken[model.process_law_] += 1
                design = np.column_stack([np.full(AT.size, LARGE), AT])
                predicted = model.predict_hardware(design)[:, 1]
                errors.append(np.abs(np.log(predicted / truth(LARGE, AT))))
                low, high = model.predict_range(design, cycles=True)
                target = truth(LARGE, AT)[-1]
                held.append(low[-1] / 1.1 <= target <= high[-1] * 1.1)
                ratios.append(high[-1] / low[-1])
            errors = np.array(errors)
            means.append(errors[:, 0].mean())
            laws = "/".join(str(v) for v in taken.values())
            print(
                f"{name:16s} {sigma:5.2f}  {laws:>28s}"
                f"  {np.median(errors[:, 0]):10.3f} {errors[:, 0].mean():6.3f}"
                f" {errors[:, 0].max():6.3f}"
                f"  {np.median(errors[:, 1]):12.3f} {errors[:, 1].max():6.3f}"
                f"  {np.mean(errors[:, 1] < np.log(1.1)):8.2f} {np.mean(held):8.2f}"
                f" {np.median(ratios):6.3g}"
            )
    print(f"mean log error at 32 processes over the rows: {np.mean(means):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
