"""NAS Parallel Benchmarks EP, IS and CG in numpy, with NPB's own verification.

Each one runs as ``python -m scaleprobe.kernels.npb.<name> --class S`` under MPI,
follows the benchmark's specification (its random number generator, problem classes
and verification values) and marks a point ``invalid`` when the verification fails.
Importing this package does not import mpi4py.
"""
