"""3D Jacobi with a non-blocking halo exchange on a 3D process grid.

The global domain ``--nx x --ny x --nz`` (doubles) is split into blocks over a
``(px, py, pz)`` process grid (:mod:`scaleprobe.kernels.stencil.grid`). Every
iteration each rank exchanges its six faces with its neighbours (``Irecv``/``Isend``,
one ``Waitall``; no exchange across the domain boundary, where the value is zero) and
then replaces every point by the mean of its six neighbours. The exchange is timed
as in ``commbench.random_pingpong`` (clocks aligned first, the end of the ``Waitall``
marked; each rank's third-quartile iteration; the largest over ranks is
``exchange_time``), and the record carries the halo pattern's descriptive metrics on
the communicator's emulated machine, so the communication predictor can be checked
on it. ``--check`` gathers the field on rank 0 and reports ``max_error`` against the
serial reference.

Run as ``mpiexec -n 8 python -m scaleprobe.kernels.stencil.jacobi3d --nx 64 --ny 64
--nz 64 --ppn 2 --throttle emulated``.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402

import numpy as np  # noqa: E402
from scaleprobe.kernels.comm import add_comm_arguments  # noqa: E402
from scaleprobe.kernels.comm.pattern import METRIC_UNITS  # noqa: E402
from scaleprobe.kernels.commbench.random_pingpong import kept_maximum  # noqa: E402
from scaleprobe.kernels.stencil.grid import (  # noqa: E402
    DIRECTIONS,
    block,
    halo_pattern,
    initial_field,
    jacobi_reference,
    neighbour,
    process_grid,
)

__all__ = ["build_parser", "main", "pattern_metrics"]

KERNEL = "stencil.jacobi3d"
_INSIDE = slice(1, -1)


def _face(axis, side):
    """Index of the boundary layer (side -1/+1) of the interior, or of its ghost."""
    inner = [_INSIDE] * 3
    ghost = [_INSIDE] * 3
    inner[axis] = 1 if side < 0 else -2
    ghost[axis] = 0 if side < 0 else -1
    return tuple(inner), tuple(ghost)


def pattern_metrics(pattern, comm):
    """Descriptive metrics of ``pattern`` on the communicator's emulated machine.

    Parameters
    ----------
    pattern : CommPattern
    comm : InstrumentedComm

    Returns
    -------
    dict
    """
    network = comm.network
    return pattern.metrics(
        ppn=comm.ppn,
        placement=network.placement,
        nodes_per_switch=network.topology.nodes_per_switch,
        switches_per_rack=network.topology.switches_per_rack,
    )


def build_parser() -> argparse.ArgumentParser:
    """Command-line parser of the kernel.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog=f"python -m scaleprobe.kernels.{KERNEL}",
        description=__doc__.split("\n\n")[0],
    )
    for axis in ("nx", "ny", "nz"):
        parser.add_argument(
            f"--{axis}",
            type=int,
            default=32,
            help=f"global points along {axis[1]} (default 32)",
        )
    parser.add_argument(
        "--iterations", type=int, default=20, help="timed iterations (default 20)"
    )
    parser.add_argument(
        "--check",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="compare with the serial reference",
    )
    add_comm_arguments(parser)
    return parser


def main(argv=None) -> int:
    """Run the solver and print the record on rank 0.

    Returns
    -------
    int
        Exit code.
    """
    args = build_parser().parse_args(argv)
    shape = (args.nx, args.ny, args.nz)
    if args.iterations < 1 or min(shape) < 1:
        raise SystemExit(
            f"--iterations and the domain sizes must be >= 1, got "
            f"{args.iterations} and {shape}"
        )
    from mpi4py import MPI
    from scaleprobe.kernels.comm import InstrumentedComm
    from scaleprobe.kernels.record import emit
    from scaleprobe.kernels.schema import SUMMARY_UNITS

    comm = InstrumentedComm.from_arguments(MPI.COMM_WORLD, args)
    dims = process_grid(comm.size)
    if any(n < p for n, p in zip(shape, dims, strict=True)) or comm.size % comm.ppn:
        if comm.rank == 0:
            emit(
                {
                    "kernel": KERNEL,
                    "status": "invalid",
                    "metrics": {},
                    "reason": f"domain {shape} cannot be split over a {dims} grid, or "
                    f"{comm.size} ranks are not a multiple of ppn={comm.ppn}",
                }
            )
        return 0
    spans = block(comm.rank, dims, shape)
    field = np.zeros([stop - start + 2 for start, stop in spans])
    field[1:-1, 1:-1, 1:-1] = initial_field(spans)
    links = []
    for tag, direction in enumerate(DIRECTIONS):
        peer = neighbour(comm.rank, dims, direction)
        if peer is not None:
            axis = next(i for i, d in enumerate(direction) if d)
            inner, ghost = _face(axis, direction[axis])
            # the neighbour sends with the opposite direction's tag
            links.append(
                (peer, inner, ghost, tag, tag ^ 1, np.empty(field[ghost].shape))
            )
    marks = []
    for _ in range(args.iterations):
        comm.sync()
        start = comm.mark()
        requests = [
            comm.Irecv(buffer, peer, tag=back) for peer, _, _, _, back, buffer in links
        ]
        requests += [
            comm.Isend(np.ascontiguousarray(field[inner]), peer, tag=tag)
            for peer, inner, _, tag, _, _ in links
        ]
        comm.Waitall(requests)
        marks.append((start, comm.mark()))
        for _, _, ghost, _, _, buffer in links:
            field[ghost] = buffer
        field[1:-1, 1:-1, 1:-1] = (
            field[:-2, 1:-1, 1:-1]
            + field[2:, 1:-1, 1:-1]
            + field[1:-1, :-2, 1:-1]
            + field[1:-1, 2:, 1:-1]
            + field[1:-1, 1:-1, :-2]
            + field[1:-1, 1:-1, 2:]
        ) / 6.0
    comm.sync()  # resolves the last exchange
    times = [comm.marked(end) - comm.marked(start) for start, end in marks]
    kept = comm.gather(kept_maximum(times), root=0)
    blocks = comm.gather(
        (spans, field[1:-1, 1:-1, 1:-1].copy()) if args.check else None, root=0
    )
    summary = comm.summary()
    if comm.rank == 0:
        metrics = pattern_metrics(halo_pattern(shape, comm.size), comm)
        extra = {}
        if args.check:
            whole = np.empty(shape)
            for (x, y, z), values in blocks:
                whole[x[0] : x[1], y[0] : y[1], z[0] : z[1]] = values
            extra["max_error"] = float(
                np.abs(whole - jacobi_reference(shape, args.iterations)).max()
            )
        emit(
            {
                "kernel": KERNEL,
                "status": "ok",
                "link": comm.link_record().to_dict(),
                "metrics": {"exchange_time": max(kept), **extra, **metrics, **summary},
                "units": {
                    "exchange_time": "s",
                    "max_error": "1",
                    **METRIC_UNITS,
                    **SUMMARY_UNITS,
                },
                "long_names": {
                    "exchange_time": "largest third-quartile halo exchange "
                    "time over ranks"
                },
            }
        )
    comm.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
