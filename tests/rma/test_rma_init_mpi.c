/* gcomm_init_mpi on processes without GPUs (CI runs it under mpiexec -n 2): every process joins
 * the job with zero GPUs, the job agrees on its size, launches answer GCOMM_ERR_NO_DEVICE on every
 * process alike, a second gcomm_init_mpi fails everywhere, and the job can be set up again. */
#include <mpi.h>
#include <stdlib.h>

#include "gcomm/gcomm_mpi.h"
#include "testutil.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    TEST_RC(GCOMM_ERR_ARG, gcomm_init_mpi(MPI_COMM_NULL));
    TEST_OK(gcomm_init_mpi(MPI_COMM_WORLD));
    int n = -1, first = -1, ngpus = -1, dev[GCOMM_MAX_GPUS];
    TEST_OK(gcomm_local_devices(&n, dev));
    TEST_OK(gcomm_job_gpus(&ngpus, &first));
    /* every process agrees on the job: the sum of local GPUs, numbered by process */
    int total = 0, before = 0;
    MPI_Allreduce(&n, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(&n, &before, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) before = 0;
    TEST_CHECK(ngpus == total && first == before, "process %d: job GPUs %d (sum %d), first %d (%d)",
               rank, ngpus, total, first, before);
    if (total == 0) {
        gcomm_launch_t l = {0};
        l.kernel = (const void *)&l;
        l.threads_per_block = 32;
        TEST_RC(GCOMM_ERR_NO_DEVICE, gcomm_launch(&l));
    }
    TEST_RC(GCOMM_ERR_ARG, gcomm_init_mpi(MPI_COMM_WORLD)); /* already: on every process */
    TEST_OK(gcomm_finalize());
    TEST_OK(gcomm_init_mpi(MPI_COMM_WORLD)); /* again, after finalize */
    TEST_OK(gcomm_finalize());
    int bad = gcommt_failures, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("test_rma_init_mpi: %d processes, %d GPU(s) in the job\n", size, total);
    MPI_Finalize();
    return gcommt_finish("test_rma_init_mpi") || any != 0;
}
