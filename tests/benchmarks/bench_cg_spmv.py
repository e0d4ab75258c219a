"""What NPB CG's product costs per nonzero, by matrix size and by vector size: a table.

CG's time is almost all its sparse products ``A p`` (:mod:`scaleprobe.kernels.npb.cg`,
scipy CSR on the whole gathered vector ``p``). The matrix is read once per product,
in order; ``p`` is read at the random columns of the nonzeros. This benchmark builds
NPB's matrices for orders and ``nonzer`` that move the two apart -- a matrix in or
far beyond the last-level cache, a vector well inside or about the size of a core's
L2 -- and times one product on one process (median of ``--products`` per round,
rounds interleaved, the median round printed).

On the 2-core host with a 1 MiB L2 per core and a 35.8 MiB L3 (two runs of three
rounds, one day): class A (21 MiB matrix, 109 KiB vector) 1.51-1.53 ns per nonzero;
order 40000 with 84 and 156 MiB matrices (312 KiB vector) 1.56-1.59; class B (157
MiB, 586 KiB) 1.86-2.05; order 75000 with a 78 MiB matrix 1.81-1.94; order 140000
(92 MiB, 1094 KiB) 3.4-3.5.
A matrix out of the L3 costs next to nothing more (the hardware prefetches a stream);
the vector's size does: what makes class B's nonzeros dearer than class A's is its
order, which no smaller NPB class shares, not its matrix leaving the L3.

Run: ``python tests/benchmarks/bench_cg_spmv.py`` (about 20 s).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scaleprobe.kernels.iterative.hardware import data_caches, last_level_cache
from scaleprobe.kernels.npb.cg import make_matrix

#: (order, nonzer): class A; order 40000 with two matrix sizes; class B; order
#: 75000 with about half B's matrix; order 140000 with a small matrix.
CASES = [(14000, 11), (40000, 13), (40000, 18), (75000, 13), (75000, 9), (140000, 7)]


def _product_seconds(matrix, vector, products):
    """Median wall time of one ``matrix @ vector`` over ``products`` products."""
    times = []
    for _ in range(products):
        started = time.perf_counter()
        matrix @ vector
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--products", type=int, default=15)
    args = parser.parse_args()
    matrices = {case: make_matrix(case[0], case[1], 60.0) for case in CASES}
    rng = np.random.default_rng(0)
    vectors = {case: rng.random(case[0]) for case in CASES}
    rounds = {case: [] for case in CASES}
    for _ in range(args.rounds):
        for case in CASES:
            matrix = matrices[case]
            seconds = _product_seconds(matrix, vectors[case], args.products)
            rounds[case].append(seconds / matrix.nnz * 1e9)
    print(
        f"L2 {data_caches().get(2, float('nan')) / 2**10:.0f} KiB per core, "
        "last-level cache "
        f"{last_level_cache() / 2**20:.1f} MiB"
    )
    print(
        f"{'order':>7} {'nonzer':>6} {'nnz/row':>7} {'matrix MiB':>10} "
        f"{'vector KiB':>10} {'ns/nnz':>7} {'range':>11} {'vs first':>8}"
    )
    first = float(np.median(rounds[CASES[0]]))
    for case in CASES:
        matrix = matrices[case]
        cost = float(np.median(rounds[case]))
        bytes_ = matrix.data.nbytes + matrix.indices.nbytes + matrix.indptr.nbytes
        print(
            f"{case[0]:>7} {case[1]:>6} {matrix.nnz / case[0]:>7.0f} "
            f"{bytes_ / 2**20:>10.0f} {case[0] * 8 / 2**10:>10.0f} {cost:>7.2f} "
            f"{min(rounds[case]):>5.2f}-{max(rounds[case]):<5.2f} "
            f"{cost / first:>8.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
