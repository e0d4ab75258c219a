#!/bin/bash
# scaleprobe sweep on a dask-mpi cluster started by mpiexec
set -euo pipefail

# scaleprobe must be on PATH (activate its environment here)

mpiexec -n 3 -f hosts.txt scaleprobe run --dask-mpi campaign.yaml
