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

import numpy as np  # noqa: E402
from scaleprobe.kernels.commbench.random_pingpong import (  # noqa: E402
    PATTERN_METRICS,
    kept_maximum,
    pattern_metrics,
)
from scaleprobe.kernels.harness import (  # noqa: E402
    KernelDeclaration,
    Measurement,
    Metric,
    Parameter,
)
from scaleprobe.kernels.stencil.grid import (  # noqa: E402
    DIRECTIONS,
    block,
    halo_pattern,
    initial_field,
    jacobi_reference,
    neighbour,
    process_grid,
)

__all__ = [
    "GRID_METRICS",
    "GRID_PARAMETERS",
    "KERNEL",
    "block_bytes",
    "build_parser",
    "exchange_measurement",
    "ghosted_block",
    "jacobi",
    "main",
    "splittable",
]
_INSIDE = slice(1, -1)


def _face(axis, side):
    """Index of the boundary layer (side -1/+1) of the interior, or of its ghost."""
    inner = [_INSIDE] * 3
    ghost = [_INSIDE] * 3
    inner[axis] = 1 if side < 0 else -2
    ghost[axis] = 0 if side < 0 else -1
    return tuple(inner), tuple(ghost)


#: The domain, iterations and check of both stencil kernels.
GRID_PARAMETERS = (
    *(
        Parameter(axis, "int", 32, minimum=1, help=f"global points along {axis[1]}")
        for axis in ("nx", "ny", "nz")
    ),
    Parameter("iterations", "int", 20, minimum=1, help="timed iterations"),
    Parameter("check", "bool", False, help="compare with the serial reference"),
)

#: What both stencil kernels report besides the communicator's summary.
GRID_METRICS = (
    Metric(
        "exchange_time", "s", "largest third-quartile halo exchange time over ranks"
    ),
    Metric("max_error", "1", "largest difference from the serial reference"),
    *PATTERN_METRICS,
)


def splittable(args, ranks: int, ppn: int) -> str:
    """Why the domain cannot be split over ``ranks`` ranks in whole nodes, or ``""``.

    Parameters
    ----------
    args : Arguments
        ``nx``, ``ny``, ``nz``.
    ranks, ppn : int

    Returns
    -------
    str

    Examples
    --------
    >>> from scaleprobe.kernels.harness import Arguments
    >>> splittable(Arguments(nx=1, ny=8, nz=8), 8, 1)  # doctest: +ELLIPSIS
    'domain (1, 8, 8) cannot be split over a (2, 2, 2) grid, or 8 ranks are ...'
    >>> splittable(Arguments(nx=8, ny=8, nz=8), 8, 2)
    ''
    """
    shape, dims = (args.nx, args.ny, args.nz), process_grid(ranks)
    if any(n < p for n, p in zip(shape, dims, strict=True)) or ranks % ppn:
        return (
            f"domain {shape} cannot be split over a {dims} grid, or {ranks} ranks "
            f"are not a multiple of ppn={ppn}"
        )
    return ""


def block_bytes(args, ranks: int) -> int:
    """Bytes of the largest ghosted block of ``ranks`` ranks (the working set).

    Parameters
    ----------
    args : Arguments
        ``nx``, ``ny``, ``nz``.
    ranks : int

    Returns
    -------
    int

    Examples
    --------
    >>> from scaleprobe.kernels.harness import Arguments
    >>> block_bytes(Arguments(nx=32, ny=32, nz=32), 8)
    46656
    """
    dims = process_grid(ranks)
    shape = (args.nx, args.ny, args.nz)
    return 8 * int(np.prod([-(-n // p) + 2 for n, p in zip(shape, dims, strict=True)]))


def ghosted_block(comm, shape):
    """This rank's block of the initial field with one ghost layer.

    Parameters
    ----------
    comm : InstrumentedComm
    shape : tuple of int
        The global domain.

    Returns
    -------
    tuple
        ``(dims, spans, field)``: the process grid, the block's global index ranges
        and the ghosted array.
    """
    dims = process_grid(comm.size)
    spans = block(comm.rank, dims, shape)
    field = np.zeros([stop - start + 2 for start, stop in spans])
    field[1:-1, 1:-1, 1:-1] = initial_field(spans)
    return dims, spans, field


def exchange_measurement(
    comm, args, spans, field, times, pattern, reference, long_names=None
):
    """The record of a stencil run: exchange time, pattern metrics, check.

    Collective: gathers every rank's kept exchange time (and, with ``--check``,
    its block), then the communicator's summary.

    Parameters
    ----------
    comm : InstrumentedComm
    args : Arguments
        ``check``.
    spans : list of tuple
        This rank's block.
    field : numpy.ndarray
        The ghosted block after the run.
    times : list of float
        This rank's exchange seconds per iteration.
    pattern : CommPattern
        One iteration's pattern.
    reference : callable
        ``reference() -> numpy.ndarray``: the serial result (rank 0, with --check).
    long_names : dict, optional
        Long names of this run's metrics beyond the declared ones.

    Returns
    -------
    Measurement or None
        On rank 0; None elsewhere.
    """
    kept = comm.gather(kept_maximum(times), root=0)
    blocks = comm.gather(
        (spans, field[1:-1, 1:-1, 1:-1].copy()) if args.check else None, root=0
    )
    summary = comm.summary()
    if comm.rank != 0:
        return None
    metrics = {"exchange_time": max(kept)}
    if args.check:
        whole = np.empty((args.nx, args.ny, args.nz))
        for (x, y, z), values in blocks:
            whole[x[0] : x[1], y[0] : y[1], z[0] : z[1]] = values
        metrics["max_error"] = float(np.abs(whole - reference()).max())
    metrics.update(pattern_metrics(pattern, comm))
    return Measurement(metrics=metrics, summary=summary, long_names=long_names or {})


def _halo_links(comm, dims, field):
    """``(peer, inner, ghost, tag, back, buffer)`` of every neighbour of this rank."""
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
    return links


def _jacobi_steps(comm, field, links, iterations) -> list[float]:
    """Exchange halos and average, ``iterations`` times; the exchange seconds."""
    marks = []
    for _ in range(iterations):
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
    return [comm.marked(end) - comm.marked(start) for start, end in marks]


def jacobi(comm, args) -> Measurement | None:
    """Run the solver (collective).

    Parameters
    ----------
    comm : InstrumentedComm
    args : Arguments
        The grid parameters (:data:`GRID_PARAMETERS`).

    Returns
    -------
    Measurement or None
        On rank 0; None elsewhere.
    """
    shape = (args.nx, args.ny, args.nz)
    dims, spans, field = ghosted_block(comm, shape)
    times = _jacobi_steps(comm, field, _halo_links(comm, dims, field), args.iterations)
    return exchange_measurement(
        comm,
        args,
        spans,
        field,
        times,
        halo_pattern(shape, comm.size),
        lambda: jacobi_reference(shape, args.iterations),
    )


KERNEL = KernelDeclaration(
    name="stencil.jacobi3d",
    summary="3D Jacobi with a non-blocking halo exchange on a 3D process grid.",
    description=__doc__,
    parameters=GRID_PARAMETERS,
    metrics=GRID_METRICS,
    checks=(splittable,),
    working_set=block_bytes,
    work=jacobi,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
