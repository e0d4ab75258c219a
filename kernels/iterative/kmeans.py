"""K-means clustering of image pixels (RGB + x, y), as FiM's evaluation runs it.

The data are ``--points`` pixels with five features each, the colour channels and the
position, all scaled to [0, 1] (Bhimani et al. 2019, Section 4): a synthetic image made
reproducibly from ``--seed`` (a Voronoi mosaic of ``--regions`` coloured cells with
pixel noise), or an image file (``--image``: binary PPM ``P6`` or a ``.npy`` array of
shape (height, width, 3); its first ``--points`` pixels, all by default). Rank 0 reads
or makes the data and picks ``--clusters`` distinct pixels as the first centroids
(seeded); then, timed:

1. rank 0 scatters the pixels in contiguous blocks (``Scatterv``);
2. ``--iterations`` times: rank 0 broadcasts the centroids (``Bcast``), every rank
   assigns its pixels to the nearest centroid and sums them per cluster, rank 0
   gathers the partial sums (``Gather``) and computes the new centroids (an empty
   cluster keeps its centroid).

The record's ``profiles.iteration`` has the computation and the scatter, broadcast
and gather times and data points (jobs) of every iteration (the scatter belongs to
iteration 0), and the metrics FiM needs (``hw_*``). ``--check`` repeats the
clustering serially on rank 0 and makes the point ``invalid`` when a centroid
differs by more than 1e-9.

Run as ``mpiexec -n 4 python -m scaleprobe.kernels.iterative.kmeans --points 65536
--clusters 8 --iterations 10 --throttle emulated``.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
from scaleprobe.kernels.harness import (  # noqa: E402
    KernelDeclaration,
    Measurement,
    Metric,
    Parameter,
)
from scaleprobe.kernels.iterative.profile import (  # noqa: E402
    IterationProfile,
    iteration_measurement,
    iteration_metrics,
)

__all__ = [
    "FEATURES",
    "KERNEL",
    "assign",
    "build_parser",
    "cluster",
    "kmeans_reference",
    "main",
    "read_image",
    "synthetic_image",
]
#: Features of one data point.
FEATURES = ("red", "green", "blue", "x", "y")
_CHUNK = 1 << 15
_TOLERANCE = 1e-9
#: Bytes of one data point of each collective: a pixel and a centroid are 5
#: doubles, a cluster's partial sums 7.
_JOB_BYTES = {"scatter": 40, "bcast": 40, "gather": 56}
_DEFAULT_POINTS = 65536


def synthetic_image(points: int, seed: int = 1, regions: int = 16) -> np.ndarray:
    """``points`` pixels of a seeded Voronoi mosaic, features scaled to [0, 1].

    The image is ``ceil(sqrt(points))`` pixels wide; pixels are taken row by row.
    Each of ``regions`` random sites has a random colour; a pixel takes the colour of
    its nearest site plus Gaussian noise (0.03), clipped to [0, 1].

    Parameters
    ----------
    points : int
        Number of pixels.
    seed : int, default=1
    regions : int, default=16

    Returns
    -------
    numpy.ndarray of shape (points, 5)
        Columns :data:`FEATURES`.

    Examples
    --------
    >>> pixels = synthetic_image(100, seed=3)
    >>> pixels.shape, bool(pixels.min() >= 0), bool(pixels.max() <= 1)
    ((100, 5), True, True)
    >>> bool(np.array_equal(pixels, synthetic_image(100, seed=3)))
    True
    """
    if points < 1 or regions < 1:
        raise ValueError(f"points and regions must be >= 1, got {points}, {regions}")
    rng = np.random.default_rng(seed)
    width = int(np.ceil(np.sqrt(points)))
    height = -(-points // width)
    sites = rng.random((regions, 2))
    colours = rng.random((regions, 3))
    index = np.arange(points)
    position = np.column_stack(
        [(index % width + 0.5) / width, (index // width + 0.5) / height]
    )
    nearest = np.empty(points, dtype=np.int64)
    for start in range(0, points, _CHUNK):
        block = position[start : start + _CHUNK]
        distance = ((block[:, None, :] - sites[None, :, :]) ** 2).sum(axis=2)
        nearest[start : start + _CHUNK] = distance.argmin(axis=1)
    colour = np.clip(colours[nearest] + rng.normal(0.0, 0.03, (points, 3)), 0.0, 1.0)
    return np.column_stack([colour, position])


def read_image(path: str, points: int | None = None) -> np.ndarray:
    """Pixels of an image file as K-means data (features :data:`FEATURES`).

    Parameters
    ----------
    path : str
        Binary PPM (``P6``, 8-bit) or ``.npy`` array of shape (height, width, 3).
    points : int, optional
        Keep the first ``points`` pixels (row by row); all by default.

    Returns
    -------
    numpy.ndarray of shape (n, 5)
    """
    if path.endswith(".npy"):
        rgb = np.load(path)
        if rgb.ndim != 3 or rgb.shape[2] != 3:
            raise ValueError(
                f"{path}: expected an array (height, width, 3), got shape {rgb.shape}"
            )
        top = float(rgb.max()) if rgb.dtype.kind == "f" else 255.0
        rgb = rgb.astype(np.float64) / (top or 1.0)
    else:
        with open(path, "rb") as handle:
            data = handle.read()
        fields, position = [], 0
        while len(fields) < 4:
            while data[position : position + 1].isspace():
                position += 1
            if data[position : position + 1] == b"#":
                position = data.index(b"\n", position)
                continue
            end = position
            while not data[end : end + 1].isspace():
                end += 1
            fields.append(data[position:end])
            position = end
        if fields[0] != b"P6" or int(fields[3]) > 255:
            raise ValueError(
                f"{path}: only binary 8-bit PPM (P6) or .npy images are "
                f"read, got header {fields[0]!r} with maximum "
                f"{fields[3].decode()}"
            )
        width, height, top = int(fields[1]), int(fields[2]), int(fields[3])
        raw = np.frombuffer(data, np.uint8, width * height * 3, position + 1)
        rgb = raw.reshape(height, width, 3).astype(np.float64) / top
    height, width = rgb.shape[:2]
    rows, cols = np.divmod(np.arange(height * width), width)
    pixels = np.column_stack(
        [rgb.reshape(-1, 3), (cols + 0.5) / width, (rows + 0.5) / height]
    )
    if points is not None:
        if not 1 <= points <= len(pixels):
            raise ValueError(f"{path} has {len(pixels)} pixels; cannot take {points}")
        pixels = pixels[:points]
    return pixels


def assign(pixels: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Per-cluster sums of the nearest pixels: ``(k, 7)`` = features, count, SSE.

    Distances are computed elementwise (no BLAS), so a pixel's assignment does not
    depend on how the pixels are split over ranks.

    Parameters
    ----------
    pixels : numpy.ndarray of shape (n, 5)
    centroids : numpy.ndarray of shape (k, 5)

    Returns
    -------
    numpy.ndarray of shape (k, 7)
        Sum of each feature, number of pixels and sum of squared distances of the
        pixels nearest to each centroid.

    Examples
    --------
    >>> sums = assign(np.array([[0.0] * 5, [1.0] * 5]), np.array([[0.0] * 5]))
    >>> sums[0, :5].tolist(), float(sums[0, 5]), float(sums[0, 6])
    ([1.0, 1.0, 1.0, 1.0, 1.0], 2.0, 5.0)
    """
    k = len(centroids)
    sums = np.zeros((k, 7))
    for start in range(0, len(pixels), _CHUNK):
        block = pixels[start : start + _CHUNK]
        distance = ((block[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
        nearest = distance.argmin(axis=1)
        for feature in range(5):
            sums[:, feature] += np.bincount(nearest, block[:, feature], minlength=k)
        sums[:, 5] += np.bincount(nearest, minlength=k)
        sums[:, 6] += np.bincount(
            nearest, distance[np.arange(len(block)), nearest], minlength=k
        )
    return sums


def _update(centroids, totals):
    counts = totals[:, 5]
    new = centroids.copy()
    filled = counts > 0
    new[filled] = totals[filled, :5] / counts[filled, None]
    return new


def kmeans_reference(pixels, centroids, iterations):
    """Serial K-means with the kernel's arithmetic: ``(centroids, sse)``.

    Examples
    --------
    >>> pixels = np.array([[0.0] * 5, [0.1] * 5, [0.9] * 5, [1.0] * 5])
    >>> final, sse = kmeans_reference(pixels, pixels[[0, 3]].copy(), 2)
    >>> np.round(final[:, 0], 2).tolist()
    [0.05, 0.95]
    """
    sse = np.nan
    for _ in range(iterations):
        totals = assign(pixels, centroids)
        sse = float(totals[:, 6].sum())
        centroids = _update(centroids, totals)
    return centroids, sse


def working_set(args, ranks: int) -> float:
    """Bytes one rank's iterations read and write: its pixels and a chunk of
    distances to the centroids.

    Parameters
    ----------
    args : Arguments
        ``points`` (65536 when not given, the synthetic image's) and ``clusters``.
    ranks : int

    Returns
    -------
    float

    Examples
    --------
    >>> from scaleprobe.kernels.harness import Arguments
    >>> working_set(Arguments(points=1000, clusters=8), 3)
    3421232.0
    """
    points = args.points or _DEFAULT_POINTS
    rows = -(-points // ranks)
    return float(8 * 5 * rows + _CHUNK * 8 * (args.clusters + 5))


def _first_centroids(pixels, args):
    chosen = np.random.default_rng(args.seed).choice(
        len(pixels), args.clusters, replace=False
    )
    return pixels[np.sort(chosen)].copy()


def _pixels(args):
    """Rank 0's pixels and first centroids, or why there are none."""
    try:
        if args.image:
            pixels = read_image(args.image, args.points)
        else:
            pixels = synthetic_image(
                args.points or _DEFAULT_POINTS, args.seed, args.regions
            )
    except (OSError, ValueError) as error:
        return None, None, str(error)
    if args.clusters > len(pixels):
        return (
            None,
            None,
            f"--clusters {args.clusters} exceeds the {len(pixels)} pixels",
        )
    return pixels, _first_centroids(pixels, args), ""


def _iterate(comm, profile, args, pixels, centroids, counts):
    """The timed region: scatter the pixels, then cluster (rank 0 updates)."""
    root = comm.rank == 0
    local = np.empty((counts[comm.rank], 5))
    sums = np.empty((comm.size, args.clusters, 7)) if root else None
    others = comm.size - 1
    profile.next_iteration()
    with profile.collective("scatter", jobs=int(counts.sum()) - counts[0]):
        comm.Scatterv([pixels, counts * 5] if root else None, local, root=0)
    sse = np.nan
    for iteration in range(args.iterations):
        if iteration:
            profile.next_iteration()
        with profile.collective("bcast", jobs=args.clusters if others else 0):
            comm.Bcast(centroids, root=0)
        with profile.compute():
            partial = assign(local, centroids)
        with profile.collective("gather", jobs=args.clusters * others):
            comm.Gather(partial, sums, root=0)
        if root:
            with profile.compute():
                totals = sums.sum(axis=0)
                sse = float(totals[:, 6].sum())
                centroids = _update(centroids, totals)
    return centroids, sse


def _verify(args, pixels, centroids):
    """Why the centroids are wrong (``""`` if not), and the check's metrics."""
    reason, extra = "", {}
    if not np.all(np.isfinite(centroids)):
        reason = "a centroid is not finite"
    if args.check:
        expected, _ = kmeans_reference(
            pixels, _first_centroids(pixels, args), args.iterations
        )
        extra["max_centroid_error"] = float(np.abs(expected - centroids).max())
        if not extra["max_centroid_error"] <= _TOLERANCE:
            reason = reason or (
                f"centroids differ from serial K-means by "
                f"{extra['max_centroid_error']:.3g} > {_TOLERANCE}"
            )
    return reason, extra


def cluster(comm, args):
    """Cluster the pixels (collective).

    Parameters
    ----------
    comm : InstrumentedComm
    args : Arguments
        The kernel's parameters.

    Returns
    -------
    Measurement or None
        On rank 0 (``invalid`` when the pixels could not be made or read, or the
        centroids are wrong); None elsewhere.
    """
    root = comm.rank == 0
    pixels, centroids, problem = _pixels(args) if root else (None, None, "")
    problem = comm.bcast(problem)
    if problem:
        return Measurement(metrics={}, reason=problem) if root else None
    total = comm.bcast(len(pixels) if root else None)
    counts = np.array(
        [total // comm.size + (r < total % comm.size) for r in range(comm.size)]
    )
    if not root:
        centroids = np.empty((args.clusters, 5))
    profile = IterationProfile(comm, _JOB_BYTES, counters=args.counters)
    profile.working_set(8 * 5 * counts[comm.rank] + _CHUNK * 8 * (args.clusters + 5))
    start = comm.sync()
    origin = comm.path()
    centroids, sse = _iterate(comm, profile, args, pixels, centroids, counts)
    elapsed = comm.elapsed_since(start)
    path = comm.critical_path_since(origin)
    summary = comm.summary()
    timing = profile.result()
    if not root:
        return None
    reason, extra = _verify(args, pixels, centroids)
    return iteration_measurement(
        timing,
        elapsed=elapsed,
        path=path,
        summary=summary,
        metrics={
            "points": total,
            "clusters": args.clusters,
            "iterations": args.iterations,
            "sse": sse,
            **extra,
        },
        reason=reason,
        parameters={"points": total},
    )


KERNEL = KernelDeclaration(
    name="iterative.kmeans",
    summary="K-means clustering of image pixels (RGB + x, y), as FiM's evaluation "
    "runs it.",
    description=__doc__,
    parameters=(
        Parameter(
            "points",
            "int",
            None,
            minimum=1,
            help="pixels N (65536 by default; with --image, all of them)",
        ),
        Parameter("clusters", "int", 8, minimum=1, help="clusters K"),
        Parameter("iterations", "int", 10, minimum=1, help="iterations I"),
        Parameter(
            "seed",
            "int",
            1,
            minimum=0,
            help="seed of the synthetic image and first centroids",
        ),
        Parameter(
            "regions", "int", 16, minimum=1, help="colour cells of the synthetic image"
        ),
        Parameter(
            "image", "text", None, help="read the pixels from a P6 PPM or .npy file"
        ),
        Parameter("check", "bool", False, help="compare with serial K-means on rank 0"),
        Parameter("counters", "bool", True, help="try hardware counters"),
    ),
    metrics=(
        *iteration_metrics(_JOB_BYTES),
        Metric("points", "1", "pixels clustered"),
        Metric("clusters", "1", "clusters K"),
        Metric("iterations", "1", "iterations I"),
        Metric(
            "sse",
            "1",
            "sum of squared distances to the nearest centroid (last assignment)",
        ),
        Metric(
            "max_centroid_error",
            "1",
            "largest centroid difference from serial K-means",
        ),
    ),
    working_set=working_set,
    work=cluster,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
