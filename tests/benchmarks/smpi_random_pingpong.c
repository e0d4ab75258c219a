/* The random non-blocking ping-pong of commbench.random_pingpong, in C for SMPI.
 *
 * Usage: random_pingpong PARTNERS_FILE MSG_BYTES ITERATIONS WARMUP [aligned]
 *
 * PARTNERS_FILE holds "ranks messages" on its first line, then one line per rank
 * with its partner for each message index (-1: the rank sits that index out), as
 * scaleprobe.kernels.commbench.random_pingpong.random_partners draws them. Every
 * iteration starts with a barrier; each rank posts an Irecv from and an Isend to
 * each partner and waits for all of them. Ranks leave a barrier at different times
 * (up to a latency apart), so a rank's exchange may wait for a late partner; with
 * "aligned" every rank instead sleeps after the barrier until one common simulated
 * instant (1 ms after the latest rank left it, as an MPI_Allreduce says), so all
 * exchanges start together, as the emulator's clock alignment makes them. Each rank keeps the largest of its
 * fastest 75 % of iterations (the third quartile); rank 0 prints the largest over
 * ranks as "exchange_time <seconds>".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Leave a barrier; with aligned, wait until one instant common to all ranks. */
static double start_together(int aligned)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (!aligned)
        return MPI_Wtime();
    double now = MPI_Wtime(), latest;
    MPI_Allreduce(&now, &latest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double wait = latest + 1e-3 - MPI_Wtime();
    struct timespec pause = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
    nanosleep(&pause, NULL);
    return latest + 1e-3;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int aligned = argc == 6 && strcmp(argv[5], "aligned") == 0;
    if (argc != 5 && !aligned) {
        if (rank == 0)
            fprintf(stderr, "usage: %s PARTNERS MSG_BYTES ITERATIONS WARMUP [aligned]\n",
                    argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long bytes = atol(argv[2]);
    int iterations = atoi(argv[3]), warmup = atoi(argv[4]);
    FILE *file = fopen(argv[1], "r");
    int ranks, messages;
    if (file == NULL || fscanf(file, "%d %d", &ranks, &messages) != 2 || ranks != size) {
        fprintf(stderr, "rank %d: cannot read %s for %d ranks\n", rank, argv[1], size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int *mine = malloc(sizeof(int) * messages);
    for (int r = 0; r < ranks; r++)
        for (int m = 0; m < messages; m++) {
            int peer;
            if (fscanf(file, "%d", &peer) != 1)
                MPI_Abort(MPI_COMM_WORLD, 2);
            if (r == rank)
                mine[m] = peer;
        }
    fclose(file);
    char *out = calloc(bytes, 1);
    char *in = malloc(bytes * messages);
    MPI_Request *requests = malloc(sizeof(MPI_Request) * 2 * messages);
    double *times = malloc(sizeof(double) * iterations);
    for (int it = 0; it < warmup + iterations; it++) {
        double start = start_together(aligned);
        int count = 0;
        for (int m = 0; m < messages; m++)
            if (mine[m] >= 0)
                MPI_Irecv(in + m * bytes, (int)bytes, MPI_BYTE, mine[m], m,
                          MPI_COMM_WORLD, &requests[count++]);
        for (int m = 0; m < messages; m++)
            if (mine[m] >= 0)
                MPI_Isend(out, (int)bytes, MPI_BYTE, mine[m], m, MPI_COMM_WORLD,
                          &requests[count++]);
        MPI_Waitall(count, requests, MPI_STATUSES_IGNORE);
        if (it >= warmup)
            times[it - warmup] = MPI_Wtime() - start;
    }
    qsort(times, iterations, sizeof(double), compare);
    int keep = iterations - iterations / 4;
    double kept = times[keep > 0 ? keep - 1 : 0], largest;
    MPI_Reduce(&kept, &largest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("exchange_time %.12g\n", largest);
    free(mine);
    free(out);
    free(in);
    free(requests);
    free(times);
    MPI_Finalize();
    return 0;
}
