"""Iterative, multi-stage kernels of FiM's evaluation: K-means and PageRank.

FiM and its evaluation are Bhimani et al. 2019's.

Each one runs as ``python -m scaleprobe.kernels.iterative.<name>`` under MPI, times
every iteration's computation and collectives (:mod:`.profile`) and records FiM-Cal's
hardware parameters (:mod:`.hardware`). Importing this package does not import
mpi4py.
"""
