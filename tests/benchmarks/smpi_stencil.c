/* The communication phase of stencil.jacobi3d and stencil.advection3d, in C for SMPI.
 *
 * Usage: stencil jacobi3d|advection3d NX NY NZ ITERATIONS WARMUP
 *
 * The ranks form the most balanced (px, py, pz) grid with px >= py >= pz (ties to
 * the lexicographically smaller), row-major, and split the NX x NY x NZ domain of
 * doubles into blocks whose edges are floor(i * N / parts), as
 * scaleprobe.kernels.stencil.grid does. Every iteration starts with a barrier; a
 * rank posts an Irecv from and an Isend of one face of doubles to each neighbour
 * (jacobi3d: all six directions; advection3d: receives from the -x, -y, -z
 * neighbours and sends to the +x, +y, +z ones, the explicit scheme's wavefront
 * step) and waits for all of them. Each rank keeps the largest of its fastest 75 %
 * of iterations (the third quartile); rank 0 prints the largest over ranks as
 * "exchange_time <seconds>", then "messages <count> bytes <total>" of one phase.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void sort3(int *d)
{
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2 - i; j++)
            if (d[j] < d[j + 1]) {
                int t = d[j];
                d[j] = d[j + 1];
                d[j + 1] = t;
            }
}

static int better(const int *a, const int *b)
{
    int sa = a[0] - a[2], sb = b[0] - b[2];
    if (sa != sb)
        return sa < sb;
    for (int i = 0; i < 3; i++)
        if (a[i] != b[i])
            return a[i] < b[i];
    return 0;
}

static void process_grid(int ranks, int *dims)
{
    int found = 0;
    for (int px = 1; px <= ranks; px++) {
        if (ranks % px)
            continue;
        for (int py = 1; py <= ranks / px; py++) {
            if ((ranks / px) % py)
                continue;
            int d[3] = {px, py, ranks / px / py};
            sort3(d);
            if (!found || better(d, dims)) {
                memcpy(dims, d, sizeof d);
                found = 1;
            }
        }
    }
}

static long edge(int i, int parts, long size)
{
    return i == parts ? size : (long)(i * ((double)size / parts));
}

/* Rank at coords + direction, or -1 outside the domain. */
static int neighbour(const int *coords, const int *dims, const int *direction)
{
    int c[3];
    for (int a = 0; a < 3; a++) {
        c[a] = coords[a] + direction[a];
        if (c[a] < 0 || c[a] >= dims[a])
            return -1;
    }
    return (c[0] * dims[1] + c[1]) * dims[2] + c[2];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int downstream = argc == 7 && strcmp(argv[1], "advection3d") == 0;
    if (argc != 7 || (!downstream && strcmp(argv[1], "jacobi3d") != 0)) {
        if (rank == 0)
            fprintf(stderr, "usage: %s jacobi3d|advection3d NX NY NZ ITERATIONS WARMUP\n",
                    argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long shape[3] = {atol(argv[2]), atol(argv[3]), atol(argv[4])};
    int iterations = atoi(argv[5]), warmup = atoi(argv[6]);
    int dims[3], coords[3];
    process_grid(size, dims);
    coords[0] = rank / (dims[1] * dims[2]);
    coords[1] = rank / dims[2] % dims[1];
    coords[2] = rank % dims[2];
    long extent[3];
    for (int a = 0; a < 3; a++)
        extent[a] = edge(coords[a] + 1, dims[a], shape[a]) - edge(coords[a], dims[a], shape[a]);
    int peers_in[6], peers_out[6], tags_in[6], tags_out[6], nin = 0, nout = 0;
    long bytes_in[6], bytes_out[6];
    for (int a = 0; a < 3; a++)
        for (int s = -1; s <= 1; s += 2) {
            int direction[3] = {0, 0, 0};
            direction[a] = s;
            int peer = neighbour(coords, dims, direction);
            if (peer < 0)
                continue;
            long face = 8 * extent[0] * extent[1] * extent[2] / extent[a];
            if (!downstream || s > 0) {
                peers_out[nout] = peer;
                tags_out[nout] = 2 * a + (s > 0);
                bytes_out[nout++] = face;
            }
            if (!downstream || s < 0) {
                /* the neighbour sends its face towards us: direction -s */
                peers_in[nin] = peer;
                tags_in[nin] = 2 * a + (s < 0);
                bytes_in[nin++] = face;
            }
        }
    long largest_face = 1;
    for (int i = 0; i < nout; i++)
        largest_face = bytes_out[i] > largest_face ? bytes_out[i] : largest_face;
    for (int i = 0; i < nin; i++)
        largest_face = bytes_in[i] > largest_face ? bytes_in[i] : largest_face;
    char *out = calloc(largest_face, 1);
    char *in = malloc(largest_face * 6);
    MPI_Request requests[12];
    double *times = malloc(sizeof(double) * iterations);
    for (int it = 0; it < warmup + iterations; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        int count = 0;
        for (int i = 0; i < nin; i++)
            MPI_Irecv(in + i * largest_face, (int)bytes_in[i], MPI_BYTE, peers_in[i],
                      tags_in[i], MPI_COMM_WORLD, &requests[count++]);
        for (int i = 0; i < nout; i++)
            MPI_Isend(out, (int)bytes_out[i], MPI_BYTE, peers_out[i], tags_out[i],
                      MPI_COMM_WORLD, &requests[count++]);
        MPI_Waitall(count, requests, MPI_STATUSES_IGNORE);
        if (it >= warmup)
            times[it - warmup] = MPI_Wtime() - start;
    }
    qsort(times, iterations, sizeof(double), compare);
    int keep = iterations - iterations / 4;
    double kept = times[keep > 0 ? keep - 1 : 0], largest;
    MPI_Reduce(&kept, &largest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    long mine[2] = {nout, 0}, total[2];
    for (int i = 0; i < nout; i++)
        mine[1] += bytes_out[i];
    MPI_Reduce(mine, total, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("exchange_time %.12g\n", largest);
        printf("messages %ld bytes %ld\n", total[0], total[1]);
    }
    free(out);
    free(in);
    free(times);
    MPI_Finalize();
    return 0;
}
