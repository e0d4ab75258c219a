"""Sweep planning: the admissible points of a spec, in run order, minus those done."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json

import numpy as np

from .admissible import compile_rule
from .spec import Spec

__all__ = ["Point", "below_min_ranks", "oversubscription", "plan", "point_key"]


def point_key(coords: dict) -> str:
    """Return the stable identifier of a sweep point.

    The key depends only on the coordinate values (not on the order of the spec's
    sweep keys), so a resumed sweep recognises the points it already has.

    Parameters
    ----------
    coords : dict
        Sweep coordinates, e.g. ``{"nodes": 2, "ppn": 1, "bandwidth": 50, "run": 0}``.

    Returns
    -------
    str
        16 hexadecimal characters.

    Examples
    --------
    >>> point_key({"nodes": 2, "run": 0}) == point_key({"run": 0, "nodes": 2})
    True
    """
    text = json.dumps({k: coords[k] for k in sorted(coords)}, sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class Point:
    """One sweep point: one MPI launch.

    Attributes
    ----------
    coords : dict
        The sweep coordinates of the point, in spec order.
    key : str
        Stable identifier (see :func:`point_key`).
    index : int
        Position in the unshuffled Cartesian product.
    """

    coords: dict
    key: str
    index: int

    @property
    def ranks(self) -> int:
        """Number of MPI ranks: ``nodes * ppn``."""
        return int(self.coords["nodes"]) * int(self.coords["ppn"])

    @property
    def threads(self) -> int:
        """Threads of each rank the point asks for (1 where ``threads`` is not swept:
        the launch's ``scaleprobe.launch.threads-per-rank`` then applies)."""
        return int(self.coords.get("threads", 1))

    @property
    def cores(self) -> int:
        """Cores the point keeps busy: ``ranks * threads``."""
        return self.ranks * self.threads

    def label(self) -> str:
        """Return a short human-readable description, e.g. ``nodes=2 ppn=1 run=0``."""
        return " ".join(f"{k}={v}" for k, v in self.coords.items())


def plan(spec: Spec, done=()) -> list[Point]:
    """List the points of a sweep that still have to run, in run order.

    Parameters
    ----------
    spec : Spec
        The validated spec.
    done : iterable of str, optional
        Keys of points already in the store; they are left out.

    Returns
    -------
    list of Point
        The Cartesian product of the sweep axes, filtered by the admissible rule
        and the kernel's minimum rank count (:func:`below_min_ranks`), shuffled
        with the spec's seed (unless ``order.shuffle`` is false), without the
        points in ``done``. The order is the same for every call with the same
        spec, so a resumed sweep continues where it stopped.

    Examples
    --------
    >>> from scaleprobe.framework.spec import load_spec
    >>> spec = load_spec({"name": "p", "kernel": "commbench.compute",
    ...                   "sweep": {"nodes": [1, 2, 3, 4]},
    ...                   "admissible": "power_of_two", "order": {"shuffle": False}})
    >>> [p.coords["nodes"] for p in plan(spec)]
    [1, 2, 4]
    """
    points = _admitted(spec)
    points = [p for p in points if p.ranks >= spec.min_ranks]
    if spec.shuffle:
        order = np.random.default_rng(spec.seed).permutation(len(points))
        points = [points[i] for i in order]
    done = set(done)
    return [p for p in points if p.key not in done]


def _admitted(spec: Spec) -> list[Point]:
    admissible = compile_rule(spec.admissible)
    names = list(spec.sweep)
    points = []
    for index, values in enumerate(itertools.product(*spec.sweep.values())):
        coords = dict(zip(names, values, strict=False))
        nodes, ppn = coords["nodes"], coords["ppn"]
        if admissible(nodes=nodes, ppn=ppn, ranks=nodes * ppn):
            points.append(Point(coords=coords, key=point_key(coords), index=index))
    return points


def below_min_ranks(spec: Spec) -> list[Point]:
    """List the admissible points left out: fewer ranks than the kernel needs.

    Parameters
    ----------
    spec : Spec
        The validated spec; ``spec.min_ranks`` is the kernel's ``MIN_RANKS``.

    Returns
    -------
    list of Point

    Examples
    --------
    >>> from scaleprobe.framework.spec import load_spec
    >>> spec = load_spec({"name": "p", "kernel": "commbench.pingpong",
    ...                   "sweep": {"nodes": [1, 2]}})
    >>> [p.coords["nodes"] for p in below_min_ranks(spec)]
    [1]
    """
    return [p for p in _admitted(spec) if p.ranks < spec.min_ranks]


def oversubscription(spec: Spec, points, cores: int, threads: int = 1) -> str | None:
    """Say whether wall-clock points would run more threads than a host has cores.

    In throttle modes ``none`` and ``netns`` time is wall-clock time, and ranks that
    share a core wait for each other: the time measures the host, not the program.
    A point keeps ``ranks * threads`` cores busy (:attr:`Point.cores`). (Mode
    ``emulated`` charges CPU time and keeps host-wide core slots.)

    Parameters
    ----------
    spec : Spec
        The campaign.
    points : iterable of Point
        The points that will run on one host.
    cores : int
        Cores of that host.
    threads : int, default=1
        Threads of each rank where the sweep does not set them (the setting
        ``scaleprobe.launch.threads-per-rank``).

    Returns
    -------
    str or None
        The warning's text, or None.

    Examples
    --------
    >>> from scaleprobe.framework.spec import load_spec
    >>> spec = load_spec({"name": "p", "kernel": "commbench.compute",
    ...                   "sweep": {"nodes": [1, 4]}, "throttle": {"mode": "none"}})
    >>> oversubscription(spec, plan(spec), cores=2).split(";")[0]
    "1 point in throttle mode 'none' runs up to 4 ranks on a host of 2 cores"
    >>> spec = load_spec({"name": "p", "kernel": "commbench.compute",
    ...                   "sweep": {"nodes": [1, 2], "threads": [1, 2]},
    ...                   "throttle": {"mode": "none"}})
    >>> oversubscription(spec, plan(spec), cores=2).split(";")[0]
    "1 point in throttle mode 'none' runs up to 2 ranks x 2 threads on a host of 2 cores"
    """  # noqa: E501
    if spec.throttle.mode not in ("none", "netns") or not cores:
        return None

    def threads_of(point):
        return point.threads if "threads" in point.coords else int(threads)

    over = [p for p in points if p.ranks * threads_of(p) > cores]
    if not over:
        return None
    worst = max(over, key=lambda p: (p.ranks * threads_of(p), p.ranks))
    largest = f"{worst.ranks} ranks"
    if any(threads_of(p) > 1 for p in over):
        largest += f" x {threads_of(worst)} threads"
    count = f"{len(over)} point{'s' if len(over) > 1 else ''}"
    return (
        f"{count} in throttle mode {spec.throttle.mode!r} "
        f"run{'s' if len(over) == 1 else ''} up to {largest} on a host of "
        f"{cores} cores; ranks that share a core wait for each other and the "
        "wall-clock times measure the host more than the program: keep nodes x ppn "
        "x threads at most the cores, place ranks on real nodes "
        "(scaleprobe.launch.hostfile, srun), or use throttle mode 'emulated'"
    )
