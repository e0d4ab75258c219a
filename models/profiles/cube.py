"""Score-P CUBE profiles (``.cubex``), read with the ``pycubexr`` package.

A set of CUBE files is a folder of experiment folders named as Extra-P expects
(``<prefix>.<name><value><name><value>....r<repetition>``, e.g. ``mm.p64n1000.r2``
holds ``profile.cubex`` of the second run at ``p = 64``, ``n = 1000``): the
parameters come from the folder names, the parameters that never change are
dropped, and the ``.r`` suffix numbers the repetitions. Every metric of every call
path (Score-P's call tree, joined with ``->``) is read as its exclusive value (the
region's own), averaged over the processes and threads (``aggregate="mean"``, as
Extra-P does for weak scaling) or summed (``"sum"``, strong scaling) or their
maximum (``"max"``).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..io.common import file_error
from .table import SEPARATOR

__all__ = ["AGGREGATES", "cube_files", "cube_run", "folder_parameters"]

#: How the values of a call path's processes become one value of a run.
AGGREGATES = ("mean", "sum", "max")
_NUMBER = re.compile(r"([0-9][0-9.,]*)")


def folder_parameters(folder):
    """Parameters and repetition of an experiment folder name, as Extra-P reads it.

    Parameters
    ----------
    folder : str
        e.g. ``mm.x10y1z1.r1``.

    Returns
    -------
    parameters : dict of str to float
    repetition : int or None

    Examples
    --------
    >>> folder_parameters("mm.x10y1z25.r2")
    ({'x': 10.0, 'y': 1.0, 'z': 25.0}, 2)
    >>> folder_parameters("lulesh.p64")
    ({'p': 64.0}, None)
    """
    start = folder.find(".") + 1
    end = folder.rfind(".r")
    repetition = None
    if end > 0 and folder[end + 2 :].isdigit():
        repetition = int(folder[end + 2 :])
    else:
        end = len(folder)
    pieces = [p for p in _NUMBER.split(folder[start:end]) if p != ""]
    names = [p.strip(".,") for p in pieces[0::2]]
    values = [float(p.replace(",", ".").rstrip(".")) for p in pieces[1::2]]
    if not names or len(names) != len(values) or not all(names):
        return {}, repetition
    return dict(zip(names, values, strict=True)), repetition


def cube_files(directory):
    """Every ``.cubex`` file one folder level below ``directory``, sorted.

    Returns
    -------
    list of Path
    """
    files = sorted(Path(directory).glob("*/[!.]*.cubex"))
    if not files:
        raise file_error(
            directory,
            "holds no CUBE profiles",
            allowed="one folder per run named <prefix>.<name><value>....r<repetition> "
            "holding a .cubex file",
        )
    return files


def _callpaths(roots):
    paths = {}

    def walk(node, prefix):
        name = (
            node.region.name if not prefix else f"{prefix}{SEPARATOR}{node.region.name}"
        )
        paths[node.id] = name
        for child in node.get_children():
            walk(child, name)

    for root in roots:
        walk(root, "")
    return paths


def cube_run(path, aggregate="mean"):
    """Read one ``.cubex`` file: every metric of every call path.

    Parameters
    ----------
    path : str or Path
    aggregate : {"mean", "sum", "max"}, default="mean"
        How the values of the processes and threads become one.

    Returns
    -------
    measurements : dict of (str, str) to float
        ``(callpath, metric) -> value``.
    units : dict of str to str
    """
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES}; got {aggregate!r}")
    try:
        from pycubexr import CubexParser
        from pycubexr.utils.exceptions import MissingMetricError
    except ImportError:
        raise ImportError(
            f"reading {path} needs pycubexr, which is not installed; install it "
            "with `pip install pycubexr` (or `pip install scaleprobe[profiles]`)"
        ) from None
    reduce = {"mean": np.mean, "sum": np.sum, "max": np.max}[aggregate]
    measurements, units = {}, {}
    try:
        with CubexParser(str(path)) as cube:
            paths = _callpaths(cube.get_root_cnodes())
            for metric in cube.get_metrics():
                try:
                    values = cube.get_metric_values(metric=metric, cache=False)
                except MissingMetricError:
                    continue  # a metric the run recorded no data for
                if metric.units:
                    units[metric.name] = str(metric.units)
                for index in values.cnode_indices:
                    node = cube.get_cnode(index)
                    own = values.cnode_values(node, convert_to_exclusive=True)
                    # min/max metrics come as their own value types
                    value = float(reduce(np.asarray(own.astype(float), dtype=float)))
                    measurements[(paths[node.id], metric.name)] = value
    except (OSError, ValueError, KeyError) as error:
        raise file_error(path, f"is not a readable CUBE file ({error})") from None
    return measurements, units
