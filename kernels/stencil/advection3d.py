"""3D advection: an upwind scheme whose messages travel downstream only (a wavefront).

The field moves along (1, 1, 1), ``du/dt + du/dx + du/dy + du/dz = 0``, with zero
inflow at the domain boundary, so every point depends on its upstream (-x, -y, -z)
neighbours only and a rank talks to its upstream and downstream neighbours: one
step's pattern has the downstream messages only (``halo_pattern(...,
downstream=True)``), the wavefront pattern of the paper's advection kernel. Two
schemes (``--scheme``):

- ``explicit`` (default): ``u' = u - c (3 u - u[i-1,j,k] - u[i,j-1,k] - u[i,j,k-1])``
  from the previous iteration's values. Every iteration is a communication phase
  and a computation phase, as in the paper's application model: the ranks align their
  clocks, each receives its upstream ghosts and sends its downstream faces
  (``Irecv``/``Isend``, one ``Waitall``), then updates its block. ``exchange_time``
  is timed like ``stencil.jacobi3d`` (each rank's third-quartile exchange, the
  largest over ranks).
- ``sweep``: the implicit upwind sweep ``u[i,j,k] = (u[i,j,k] + c (u[i-1,j,k] +
  u[i,j-1,k] + u[i,j,k-1])) / (1 + 3c)`` updated in place, so a rank first waits for
  the already updated faces of its upstream neighbours, sweeps its block hyperplane
  by hyperplane, and then sends its downstream faces: the computation travels through
  the ranks as a pipeline. Its ``exchange_time`` counts the wait for the upstream
  wave (their computation included) as well as the transfers: what the program sees
  as communication, not a communication phase.

Domain, grid, flags and record are those of :mod:`scaleprobe.kernels.stencil.jacobi3d`;
``--check`` compares with the serial computation of the same scheme (bit-identical).

Run as ``mpiexec -n 8 python -m scaleprobe.kernels.stencil.advection3d --nx 64 --ny 64
--nz 64 --ppn 2 --throttle emulated``.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
from scaleprobe.kernels.harness import KernelDeclaration, Parameter  # noqa: E402
from scaleprobe.kernels.stencil.grid import (  # noqa: E402
    DIRECTIONS,
    halo_pattern,
    initial_field,
    neighbour,
)
from scaleprobe.kernels.stencil.jacobi3d import (  # noqa: E402
    GRID_METRICS,
    GRID_PARAMETERS,
    block_bytes,
    exchange_measurement,
    ghosted_block,
    splittable,
)

__all__ = [
    "COURANT",
    "EXPLICIT_COURANT",
    "KERNEL",
    "SCHEMES",
    "advect",
    "advection_reference",
    "advection_step",
    "advection_sweep",
    "build_parser",
    "main",
]

#: The explicit steps, or the pipelined implicit sweep.
SCHEMES = ("explicit", "sweep")

#: The Courant number ``c`` of the sweep.
COURANT = 0.5
#: The Courant number of the explicit scheme (stable for ``3 c <= 1``).
EXPLICIT_COURANT = 0.25


def advection_step(field, courant=EXPLICIT_COURANT):
    """One explicit upwind step of a ghosted block (upstream ghosts already set).

    Parameters
    ----------
    field : numpy.ndarray of shape (nx + 2, ny + 2, nz + 2)
        The block with one ghost layer; its interior is replaced.
    courant : float, default=EXPLICIT_COURANT

    Returns
    -------
    numpy.ndarray
        ``field``.

    Examples
    --------
    >>> u = np.zeros((3, 3, 3)); u[0, 1, 1] = 2.0; u[1, 1, 1] = 1.0
    >>> float(advection_step(u, 0.25)[1, 1, 1])
    0.75
    """
    inner = field[1:-1, 1:-1, 1:-1]
    upstream = field[:-2, 1:-1, 1:-1] + field[1:-1, :-2, 1:-1] + field[1:-1, 1:-1, :-2]
    field[1:-1, 1:-1, 1:-1] = inner - courant * (3 * inner - upstream)
    return field


def advection_sweep(field, courant=COURANT):
    """One in-place upwind sweep of a ghosted block (upstream ghosts already set).

    Parameters
    ----------
    field : numpy.ndarray of shape (nx + 2, ny + 2, nz + 2)
        The block with one ghost layer; updated in place.
    courant : float, default=COURANT

    Returns
    -------
    numpy.ndarray
        ``field``.

    Examples
    --------
    >>> u = np.zeros((3, 3, 3)); u[0, 1, 1] = 2.0
    >>> float(advection_sweep(u, 0.5)[1, 1, 1])
    0.4
    """
    index = np.indices([n - 2 for n in field.shape]).reshape(3, -1) + 1
    plane = index.sum(axis=0)
    for level in range(3, int(plane.max()) + 1):
        i, j, k = index[:, plane == level]
        upstream = field[i - 1, j, k] + field[i, j - 1, k] + field[i, j, k - 1]
        field[i, j, k] = (field[i, j, k] + courant * upstream) / (1 + 3 * courant)
    return field


def advection_reference(shape, iterations, scheme="explicit"):
    """The whole domain after ``iterations`` steps or sweeps, computed serially.

    Examples
    --------
    >>> advection_reference((4, 3, 2), 2).shape
    (4, 3, 2)
    """
    field = np.zeros([n + 2 for n in shape])
    field[1:-1, 1:-1, 1:-1] = initial_field([(0, n) for n in shape])
    update = advection_sweep if scheme == "sweep" else advection_step
    for _ in range(iterations):
        update(field)
    return field[1:-1, 1:-1, 1:-1]


def _faces(rank, dims, field):
    """``(peer, tag, index)`` of the upstream ghosts and of the downstream layers."""
    upstream, downstream = [], []
    for axis, direction in enumerate(DIRECTIONS[1::2]):
        inside = [slice(1, -1)] * 3
        for peer, side, layer in (
            (neighbour(rank, dims, [-d for d in direction]), upstream, 0),
            (neighbour(rank, dims, direction), downstream, -2),
        ):
            if peer is not None:
                inside[axis] = layer
                side.append((peer, axis, tuple(inside)))
    buffers = [np.empty(field[where].shape) for _, _, where in upstream]
    return upstream, downstream, buffers


def _explicit(comm, field, dims, iterations):
    """Run explicit steps; each rank's exchange seconds per step."""
    upstream, downstream, buffers = _faces(comm.rank, dims, field)
    marks = []
    for _ in range(iterations):
        comm.sync()
        start = comm.mark()
        requests = [
            comm.Irecv(buffer, peer, tag=axis)
            for buffer, (peer, axis, _) in zip(buffers, upstream, strict=True)
        ]
        requests += [
            comm.Isend(np.ascontiguousarray(field[where]), peer, tag=axis)
            for peer, axis, where in downstream
        ]
        comm.Waitall(requests)
        marks.append((start, comm.mark()))
        for buffer, (_, _, where) in zip(buffers, upstream, strict=True):
            field[where] = buffer
        advection_step(field)
    comm.sync()  # resolves the last exchange
    return [comm.marked(end) - comm.marked(start) for start, end in marks]


def _sweep(comm, field, dims, iterations):
    """Run the pipelined sweeps; each rank's exchange seconds per iteration."""
    upstream, downstream, buffers = _faces(comm.rank, dims, field)
    marks, sends = [], []
    for _ in range(iterations):
        start = comm.mark()
        requests = [
            comm.Irecv(buffer, peer, tag=axis)
            for buffer, (peer, axis, _) in zip(buffers, upstream, strict=True)
        ]
        comm.Waitall(requests + sends)
        for buffer, (_, _, where) in zip(buffers, upstream, strict=True):
            field[where] = buffer
        waited = comm.mark()
        advection_sweep(field)
        posting = comm.mark()
        sends = [
            comm.Isend(np.ascontiguousarray(field[where]), peer, tag=axis)
            for peer, axis, where in downstream
        ]
        marks.append([start, waited, posting, comm.mark()])
    start = comm.mark()
    comm.Waitall(sends)
    marks.append([start, comm.mark()])
    comm.sync()  # resolves the marks
    at = comm.marked
    times = [at(b) - at(a) + at(d) - at(c) for a, b, c, d in marks[:-1]]
    times[-1] += at(marks[-1][1]) - at(marks[-1][0])
    return times


def advect(comm, args):
    """Run the steps or the sweeps (collective).

    Parameters
    ----------
    comm : InstrumentedComm
    args : Arguments
        The grid parameters and ``scheme``.

    Returns
    -------
    Measurement or None
        On rank 0; None elsewhere.
    """
    shape = (args.nx, args.ny, args.nz)
    dims, spans, field = ghosted_block(comm, shape)
    comm.sync()
    run = _sweep if args.scheme == "sweep" else _explicit
    times = run(comm, field, dims, args.iterations)
    wait = "(with the upstream wait) " if args.scheme == "sweep" else ""
    return exchange_measurement(
        comm,
        args,
        spans,
        field,
        times,
        halo_pattern(shape, comm.size, downstream=True),
        lambda: advection_reference(shape, args.iterations, args.scheme),
        {
            "exchange_time": f"largest third-quartile iteration exchange time {wait}"
            "over ranks"
        },
    )


KERNEL = KernelDeclaration(
    name="stencil.advection3d",
    summary="3D advection: an upwind scheme whose messages travel downstream only "
    "(a wavefront).",
    description=__doc__,
    parameters=(
        *GRID_PARAMETERS,
        Parameter(
            "scheme",
            "choice",
            "explicit",
            choices=SCHEMES,
            help="explicit steps with an exchange phase each, or the pipelined "
            "implicit sweep",
        ),
    ),
    metrics=GRID_METRICS,
    checks=(splittable,),
    working_set=block_bytes,
    work=advect,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
