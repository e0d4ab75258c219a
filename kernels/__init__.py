"""MPI kernels, each runnable as ``python -m scaleprobe.kernels.<name>``.

A kernel is a declaration (:class:`~scaleprobe.kernels.harness.KernelDeclaration`:
its parameters with their ranges and units, the metrics it reports, its fewest ranks
and its work) that one harness runs (:mod:`scaleprobe.kernels.harness`): it talks
through :class:`scaleprobe.kernels.comm.InstrumentedComm` and prints one
:class:`~scaleprobe.kernels.schema.Record`. Importing this package never imports
mpi4py.
"""
