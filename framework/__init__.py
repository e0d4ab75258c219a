"""The sweep dataflow: spec, plan, MPI launches on Dask, and the result store."""
