"""FiM-Com's predictions: a row's replications split by their work against eight ways.

:meth:`~scaleprobe.models.FiMCom.predict` splits each row's replications over Dask
tasks, each simulating its share side by side. The simulation loops over the groups
of data points once per task, whatever its replications, so eight tasks of four small
replications cost nearly eight times one task of thirty; large replications (a tree
over 1024 ranks in 1024 groups) gain from tasks that run side by side. This prints,
per pattern, process count, data points and groups, the median seconds of a
prediction with every row split eight ways (as before) and split by the cells it
simulates (one task per ``_CELLS_PER_TASK``; the tasks it took), their ratio, and
the two predicted means (other random streams: they agree within the replications'
spread). Both are measured alternately in one run (``--repeats``) on the threaded
scheduler.

Run: ``python tests/benchmarks/bench_fim_com_tasks.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scaleprobe.models import FiMCom
from scaleprobe.models import fim_com as module

#: (pattern, ranks, data points, max_groups)
CASES = [
    ("scatter", 4, 30_000, 32),
    ("scatter", 1024, 30_000, 32),
    ("scatter", 1024, 30_000, 1024),
    ("gather", 64, 6_300, 32),
    ("tree_broadcast", 64, 8, 32),
    ("tree_broadcast", 1024, 100_000, 32),
    ("tree_broadcast", 1024, 100_000, 1024),
    ("ring_allgather", 32, 100_000, 32),
]


def _model(pattern, replications, groups):
    """A FiM-Com with set parameters (a fit is not what is timed)."""
    model = FiMCom(
        pattern=pattern,
        job_bytes=40.0,
        replications=replications,
        max_groups=groups,
    )
    model.fit(np.array([[1000.0, 2.0], [2000.0, 2.0]]), np.array([4e-4, 7e-4]))
    return model


def _timed(model, X, per_task):
    """Seconds and mean of one prediction with ``per_task`` cells a task."""
    saved = module._CELLS_PER_TASK
    module._CELLS_PER_TASK = per_task
    try:
        start = time.perf_counter()
        mean = float(model.predict(X)[0])
        return time.perf_counter() - start, mean
    finally:
        module._CELLS_PER_TASK = saved


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'pattern':>15} {'ranks':>6} {'points':>8} {'groups':>6} {'8 tasks s':>10} "
        f"{'split s':>9} {'tasks':>5} {'ratio':>6} {'mean 8 tasks':>13} "
        f"{'mean split':>11}"
    )
    for pattern, ranks, jobs, groups in CASES:
        model = _model(pattern, args.replications, groups)
        X = np.array([[jobs, ranks]], dtype=float)
        eight, split = [], []
        for _ in range(args.repeats):
            eight.append(_timed(model, X, 1))
            split.append(_timed(model, X, module._CELLS_PER_TASK))
        rows = X.astype(np.int64)
        counts = module._counts(rows, model.replications)
        tasks = int(module._tasks(pattern, rows, counts, model.max_groups)[0])
        old = float(np.median([t for t, _ in eight]))
        new = float(np.median([t for t, _ in split]))
        print(
            f"{pattern:>15} {ranks:>6} {jobs:>8} {groups:>6} {old:>10.3f} {new:>9.3f} "
            f"{tasks:>5} {old / new:>6.1f} {eight[0][1]:>13.4g} {split[0][1]:>11.4g}"
        )


if __name__ == "__main__":
    main()
