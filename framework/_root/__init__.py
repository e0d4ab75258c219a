"""scaleprobe: measure MPI programs on a small cluster, project them to a large one.

The calls of a campaign, for scripts and notebooks (:mod:`scaleprobe.framework.api`):

- :func:`run`: run or resume the sweep a spec describes, return its Dataset;
- :func:`open`: open stored results (or a measurement file) as a Dataset;
- :func:`fit`: cross-validate the model ensemble, judge which model to trust;
- :func:`project`: carry a fitted model to other node counts and networks;
- :func:`report`: write the HTML (or Markdown) report.

A script that calls them needs no ``if __name__ == "__main__":`` guard. The
subpackages are :mod:`scaleprobe.framework` (sweeps on Dask),
:mod:`scaleprobe.kernels` (the MPI kernels), :mod:`scaleprobe.models` (performance
models and projections) and :mod:`scaleprobe.deployments` (launch recipes).
Importing this package imports none of them, and none of the calls until first
use: MPI ranks that import a kernel pay for the kernel alone.

Examples
--------
>>> import importlib.metadata, scaleprobe
>>> scaleprobe.__version__ == importlib.metadata.version("scaleprobe")
True
>>> scaleprobe.run.__module__
'scaleprobe.framework.api'
"""

__all__ = ["fit", "open", "project", "report", "run"]


def __getattr__(name):
    if name == "__version__":
        from importlib.metadata import version

        return version("scaleprobe")
    if name in __all__:
        from importlib import import_module

        value = getattr(import_module("scaleprobe.framework.api"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'scaleprobe' has no attribute {name!r}")


def __dir__():
    return sorted([*__all__, "__version__"])
