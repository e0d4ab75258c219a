"""A C program built against Debian's Open MPI, for the tests of the program's MPI.

It prints one scaleprobe record with the world size it saw: under Open MPI's own
launcher one record of ``R`` ranks, under another MPI's ``R`` records of one rank.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _system import missing

OPENMPI_CC = "/usr/bin/mpicc.openmpi"
OPENMPI_RUN = "/usr/bin/mpiexec.openmpi"
VENV_MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
NEEDS_OPENMPI = pytest.mark.skipif(
    not (os.access(OPENMPI_CC, os.X_OK) and os.access(OPENMPI_RUN, os.X_OK)),
    reason=missing(
        "Debian's Open MPI with its compiler (apt-get install openmpi-bin "
        "libopenmpi-dev, as .ci/install-system-mpi does)"
    ),
)

SOURCE = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size;
    double start, elapsed;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    start = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    elapsed = MPI_Wtime() - start;
    if (rank == 0)
        printf("SCALEPROBE-RECORD {\"kernel\": \"world\", \"status\": \"ok\", "
               "\"metrics\": {\"time\": %.9f}, \"placement\": {\"ranks\": %d}}\n",
               elapsed, size);
    MPI_Finalize();
    return 0;
}
"""


def build_program(folder) -> str:
    """Compile :data:`SOURCE` with Open MPI's ``mpicc`` in ``folder``; its path."""
    (folder / "world.c").write_text(SOURCE)
    subprocess.run(
        [OPENMPI_CC, "-O2", "-o", str(folder / "world"), str(folder / "world.c")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return str(folder / "world")
