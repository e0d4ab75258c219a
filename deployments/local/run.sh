#!/bin/bash
# scaleprobe sweep on this machine (embedded Dask cluster)
set -euo pipefail

# scaleprobe must be on PATH (activate its environment here)

scaleprobe run campaign.yaml
