"""scaleprobe: measure MPI programs on a small cluster, project them to a large one.

The subpackages are :mod:`scaleprobe.framework` (sweeps on Dask),
:mod:`scaleprobe.kernels` (the MPI kernels), :mod:`scaleprobe.models` (performance
models and projections) and :mod:`scaleprobe.deployments` (launch recipes).
Importing this package imports none of them: MPI ranks that import a kernel pay for
the kernel alone.

Examples
--------
>>> import importlib.metadata, scaleprobe
>>> scaleprobe.__version__ == importlib.metadata.version("scaleprobe")
True
"""

__all__ = ["__version__"]


def __getattr__(name):
    if name == "__version__":
        from importlib.metadata import version

        return version("scaleprobe")
    raise AttributeError(f"module 'scaleprobe' has no attribute {name!r}")
