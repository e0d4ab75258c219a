"""A communication pattern described by its user, as a dict or a YAML file.

The :class:`~scaleprobe.models.CommunicationPredictor` predicts a phase from the
descriptive metrics of its pattern and mapping; :func:`pattern_metrics` turns a
description of a program's phase — never run — into those metrics, one row ready for
``predict``. A description has a ``pattern`` and an optional ``mapping``::

    pattern:                      # one of the three forms
      stencil: jacobi3d           # or advection3d: the kernels' own patterns
      shape: [256, 256, 256]      # global domain, float64 points
      ranks: 512
    # pattern: {partners: [[1, 3], [0, 2], [1, 3], [0, 2]], bytes: 65536}
    # pattern: {ranks: 4, messages: [{from: 0, to: 1, bytes: 1024, count: 2}, ...]}
    mapping:                      # all optional
      ppn: 4                      # consecutive ranks per node (default 1)
      allocation: random          # or compact (default)
      machine_nodes: 1152         # the machine the allocation is placed on
      nodes_per_switch: 18
      switches_per_rack: 4        # default: one rack
      seed: 0                     # of a random allocation

A ``messages`` entry sends ``count`` (default 1) messages of ``bytes`` each from rank
``from`` to rank ``to``. Unknown keys are refused, so a typo cannot pass silently.

:func:`pattern_table` gives the rows of one described phase at several node counts
(a stencil's ranks follow the nodes), and :func:`benchmark_frame` the training rows
of a benchmark's results: what ``scaleprobe fit --model commpredictor`` and
``scaleprobe project --stencil``/``--pattern`` use.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scaleprobe.kernels.comm.pattern import METRICS, CommPattern, place_nodes
from scaleprobe.kernels.stencil.grid import halo_pattern

__all__ = [
    "STENCILS",
    "benchmark_frame",
    "build_pattern",
    "pattern_metrics",
    "pattern_table",
]

#: Stencil kernels whose pattern a description can name.
STENCILS = ("jacobi3d", "advection3d")

_MAPPING = {
    "ppn",
    "allocation",
    "machine_nodes",
    "nodes_per_switch",
    "switches_per_rack",
    "seed",
}
_FORMS = {
    "stencil": {"stencil", "shape", "ranks"},
    "partners": {"partners", "bytes"},
    "messages": {"messages", "ranks"},
}


def _read(description):
    if isinstance(description, (str, Path)):
        import yaml

        path = Path(description)
        if not path.is_file():
            raise FileNotFoundError(f"pattern description {path} does not exist")
        description = yaml.safe_load(path.read_text())
    if not isinstance(description, dict) or "pattern" not in description:
        raise ValueError(
            "a pattern description is a mapping with a 'pattern' key "
            "(and optionally 'mapping')"
        )
    _only(description, {"pattern", "mapping"}, "the description")
    return description


def _only(section, allowed, where):
    unknown = sorted(set(section) - allowed)
    if unknown:
        raise ValueError(
            f"unknown key(s) {unknown} in {where}; allowed: {sorted(allowed)}"
        )


def build_pattern(description):
    """The :class:`CommPattern` of a description's ``pattern`` section.

    Parameters
    ----------
    description : dict or path-like
        A description (see the module docstring) or a YAML file holding one.

    Returns
    -------
    CommPattern

    Examples
    --------
    >>> ring = {"pattern": {"partners": [[1], [2], [3], [0]], "bytes": 4096}}
    >>> float(build_pattern(ring).sizes[3, 0])
    4096.0
    """
    section = _read(description)["pattern"]
    if not isinstance(section, dict):
        raise ValueError("'pattern' must be a mapping")
    form = next((name for name in _FORMS if name in section), None)
    if form is None:
        raise ValueError(f"'pattern' needs one of {sorted(_FORMS)}")
    _only(section, _FORMS[form], f"a '{form}' pattern")
    if form == "stencil":
        if section["stencil"] not in STENCILS:
            raise ValueError(
                f"stencil must be one of {STENCILS}, got {section['stencil']!r}"
            )
        shape = [int(n) for n in section.get("shape", ())]
        if len(shape) != 3 or "ranks" not in section:
            raise ValueError("a stencil pattern needs 'shape' (3 extents) and 'ranks'")
        return halo_pattern(
            shape, int(section["ranks"]), downstream=section["stencil"] == "advection3d"
        )
    if form == "partners":
        if "bytes" not in section:
            raise ValueError("a 'partners' pattern needs 'bytes' (the message size)")
        return CommPattern.from_partners(section["partners"], float(section["bytes"]))
    ranks = int(section.get("ranks", 0))
    if ranks < 1:
        raise ValueError("a 'messages' pattern needs 'ranks' >= 1")
    sizes, counts = np.zeros((ranks, ranks)), np.zeros((ranks, ranks))
    for entry in section["messages"]:
        _only(entry, {"from", "to", "bytes", "count"}, "a message")
        source, target = int(entry["from"]), int(entry["to"])
        count = int(entry.get("count", 1))
        if not (0 <= source < ranks and 0 <= target < ranks) or source == target:
            raise ValueError(
                f"message from {source} to {target}: ranks must differ "
                f"and lie in 0..{ranks - 1}"
            )
        if count < 1 or float(entry["bytes"]) <= 0:
            raise ValueError(
                f"message from {source} to {target}: 'bytes' and 'count' must be > 0"
            )
        sizes[source, target] += count * float(entry["bytes"])
        counts[source, target] += count
    return CommPattern(sizes, counts)


def pattern_metrics(description, columns=METRICS):
    """The descriptive metrics of a described pattern under its mapping.

    Parameters
    ----------
    description : dict or path-like
        A description (see the module docstring) or a YAML file holding one.

    Returns
    -------
    pandas.DataFrame
        One row, one column per name in ``columns`` (the paper's ``METRICS`` by
        default; ``EXTRA_METRICS`` may be added): what
        :meth:`CommunicationPredictor.predict` takes.

    Examples
    --------
    Eight ranks exchanging halos of a 16^3 domain, two ranks per node:

    >>> row = pattern_metrics({"pattern": {"stencil": "jacobi3d",
    ...                                    "shape": [16, 16, 16], "ranks": 8},
    ...                        "mapping": {"ppn": 2}})
    >>> row[["S", "M", "N", "NT"]].iloc[0].tolist()
    [512.0, 3.0, 4.0, 2048.0]
    """
    description = _read(description)
    pattern = build_pattern(description)
    mapping = description.get("mapping") or {}
    if not isinstance(mapping, dict):
        raise ValueError("'mapping' must be a mapping")
    _only(mapping, _MAPPING, "'mapping'")
    ppn = int(mapping.get("ppn", 1))
    if ppn < 1 or pattern.ranks % ppn:
        raise ValueError(
            f"mapping ppn={ppn} must be >= 1 and divide the {pattern.ranks} ranks"
        )
    placement = place_nodes(
        pattern.ranks // ppn,
        allocation=mapping.get("allocation", "compact"),
        machine_nodes=mapping.get("machine_nodes"),
        seed=int(mapping.get("seed", 0)),
    )
    values = pattern.metrics(
        ppn=ppn,
        placement=placement,
        nodes_per_switch=int(mapping.get("nodes_per_switch", 18)),
        switches_per_rack=mapping.get("switches_per_rack"),
    )
    return pd.DataFrame([[values[name] for name in columns]], columns=list(columns))


def pattern_table(description, nodes, columns=METRICS):
    """Metrics of a described phase at each of several node counts.

    Parameters
    ----------
    description : dict or path-like
        A description (see the module docstring). A stencil's ``ranks`` becomes
        ``nodes * ppn`` for every node count (and may be left out); a ``partners`` or
        ``messages`` pattern has fixed ranks, so ``nodes`` must be ``ranks / ppn``.
    nodes : sequence of int
        Node counts.

    Returns
    -------
    pandas.DataFrame
        One row per node count, one column per name in ``columns``.

    Examples
    --------
    >>> table = pattern_table({"pattern": {"stencil": "jacobi3d",
    ...                                    "shape": [64, 64, 64]},
    ...                        "mapping": {"ppn": 2}}, [4, 8])
    >>> table[["N", "PPN", "M"]].values.tolist()
    [[4.0, 2.0, 3.0], [8.0, 2.0, 3.5]]
    """
    description = _read(description)
    ppn = int((description.get("mapping") or {}).get("ppn", 1))
    rows = []
    for count in nodes:
        count = int(count)
        if count < 1:
            raise ValueError(f"node counts must be >= 1, got {count}")
        pattern = dict(description["pattern"])
        if "stencil" in pattern:
            pattern["ranks"] = count * ppn
        else:
            ranks = _ranks(pattern)
            if ranks != count * ppn:
                raise ValueError(
                    f"this pattern has {ranks} ranks: at ppn {ppn} it runs on "
                    f"{ranks / ppn:g} nodes, not {count}"
                )
        rows.append(pattern_metrics({**description, "pattern": pattern}, columns))
    return pd.concat(rows, ignore_index=True)


def _ranks(pattern):
    if "partners" in pattern:
        return len(pattern["partners"])
    return int(pattern.get("ranks", 0))


def benchmark_frame(dataset, target="exchange_time", columns=METRICS):
    """Training rows of a benchmark's results: the metrics and the measured time.

    Parameters
    ----------
    dataset : xarray.Dataset
        Results of ``commbench.random_pingpong`` (or any kernel whose record has
        the metrics of ``METRICS`` and ``target``).
    target : str, default="exchange_time"
    columns : sequence of str, default=METRICS
        The metrics to return.

    Returns
    -------
    X : pandas.DataFrame
        One row per successful measurement, the metrics of ``columns``.
    y : numpy.ndarray
        The target, seconds.
    """
    missing = [name for name in (*columns, target) if name not in dataset.data_vars]
    if missing:
        raise ValueError(
            f"the results lack {', '.join(missing)}: the communication predictor "
            "trains on a benchmark whose records carry the pattern metrics and "
            f"{target!r} (commbench.random_pingpong)"
        )
    names = [*columns, target]
    if "status" in dataset.data_vars:
        names.append("status")
    frame = dataset[names].to_dataframe().reset_index()
    if "status" in frame:
        frame = frame[frame["status"].astype(str) == "ok"]
    frame = frame.dropna(subset=[*columns, target])
    if frame.empty:
        raise ValueError(f"no successful measurement of {target!r} to train on")
    return (
        frame[list(columns)].astype(float).reset_index(drop=True),
        frame[target].to_numpy(dtype=float),
    )
