"""An example kernel: the time of an Allreduce of a vector of doubles.

A new kernel is one module like this one: its work and its declaration. The harness
(:mod:`scaleprobe.kernels.harness`) parses the command line, checks the ranges,
starts MPI and the instrumented communicator, and prints the record. Run it as
``mpiexec -n 2 python -m scaleprobe.kernels.example --values 1024``; one line in the
``scaleprobe.kernels`` entry points would register it (this one is not registered).
"""

import numpy as np
from scaleprobe.kernels.harness import KernelDeclaration, Measurement, Metric, Parameter


def allreduce_times(comm, args):
    """Sum a vector over the ranks ``args.repeats`` times (collective)."""
    from mpi4py import MPI

    vector, total = np.full(args.values, comm.rank + 1.0), np.empty(args.values)
    times = []
    for _ in range(args.repeats):
        start = comm.sync()
        comm.Allreduce(vector, total, op=MPI.SUM)
        times.append(comm.elapsed_since(start))
    return Measurement(
        metrics={"time": float(np.median(times)), "total": float(total[0])},
        trials=[{"time": t} for t in times],
        summary=comm.summary(),
    )


KERNEL = KernelDeclaration(
    name="example",
    summary="The time of an Allreduce of a vector of doubles.",
    description=__doc__,
    parameters=(
        Parameter("values", "int", 1024, minimum=1, help="doubles per rank"),
        Parameter("repeats", "int", 5, minimum=1, help="timed Allreduce calls"),
    ),
    metrics=(
        Metric("time", "s", "median time of one Allreduce"),
        Metric("total", "1", "the sum of 1 .. ranks"),
        Metric("time", "s", "time of one Allreduce", per="trial"),
    ),
    min_ranks=2,
    working_set=lambda args, ranks: 16 * args.values,
    work=allreduce_times,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
