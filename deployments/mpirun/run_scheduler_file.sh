#!/bin/bash
# scaleprobe sweep on a dask-mpi cluster started by mpiexec
set -euo pipefail

# scaleprobe must be on PATH (activate its environment here)

rm -f scheduler.json
mpiexec -n 2 -f hosts.txt dask-mpi --scheduler-file scheduler.json --worker-class distributed.Worker --worker-options '{"death_timeout": 300}' &
cluster_pid=$!
while [ ! -s scheduler.json ] && kill -0 "$cluster_pid" 2>/dev/null; do sleep 1; done
[ -s scheduler.json ] || { echo "the Dask cluster ended without writing scheduler.json" >&2; exit 1; }
status=0
scaleprobe run --scheduler-file scheduler.json campaign.yaml || status=$?
python -m scaleprobe.deployments.shutdown scheduler.json || true
wait "$cluster_pid" || true
exit "$status"
