"""MPI kernels, each runnable as ``python -m scaleprobe.kernels.<name>``.

Every kernel talks through :class:`scaleprobe.kernels.comm.InstrumentedComm` and prints
one record with :func:`scaleprobe.kernels.record.emit`. Importing this package never
imports mpi4py.
"""
