/* The job a gcomm GPU program runs in, for the mini-apps and benchmarks: started by mpirun (and
 * built with MPI: APP_WITH_MPI), every process is one part of the job (gcomm_init_mpi, one GPU
 * each; with GCOMM_FORCE_PROXY the processes reach each other through the proxy); otherwise one
 * process drives every visible GPU (gcomm_init). The program then works on its local GPUs, whose
 * job indices are first .. first + nlocal - 1 of ngpus, and combines per-process figures with
 * the reductions below (no-ops in a single process).
 * Header only: each program includes it once. */
#ifndef GCOMM_APPS_APP_JOB_H
#define GCOMM_APPS_APP_JOB_H

#include <stdio.h>
#include <stdlib.h>

#include "gcomm/gcomm.h"
#if defined(APP_WITH_MPI)
#include <mpi.h>

#include "gcomm/gcomm_mpi.h"
#endif

typedef struct {
    int mpi;         /* 1: one process of several (gcomm_init_mpi) */
    int rank, size;  /* this process among the job's (0 of 1 without MPI) */
    int ngpus;       /* GPUs of the whole job */
    int first;       /* job index of this process's first GPU */
    int nlocal;      /* GPUs this process drives */
    int dev[GCOMM_MAX_GPUS];
} app_job_t;

/* Whether a process manager started this process (Open MPI, MPICH/Hydra, PMIx, MVAPICH). */
static inline int app_job_under_mpirun(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                       "MV2_COMM_WORLD_SIZE"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

/* gcomm_init or gcomm_init_mpi; returns a GCOMM_* code (the detail in gcomm_last_error_detail). */
static inline int app_job_init(int *argc, char ***argv, app_job_t *j)
{
    j->mpi = 0;
    j->rank = 0;
    j->size = 1;
    int rc;
#if defined(APP_WITH_MPI)
    if (app_job_under_mpirun()) {
        int provided = 0;
        /* serialized: the proxy's thread calls MPI while the main thread waits in gcomm_launch */
        MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &j->rank);
        MPI_Comm_size(MPI_COMM_WORLD, &j->size);
        j->mpi = 1;
        rc = gcomm_init_mpi(MPI_COMM_WORLD);
    } else
#endif
    {
        (void)argc;
        (void)argv;
        if (app_job_under_mpirun())
            fprintf(stderr, "note: started by mpirun, but built without MPI: every process "
                            "runs the whole job on its own\n");
        rc = gcomm_init();
    }
    if (rc != GCOMM_SUCCESS) return rc;
    rc = gcomm_local_devices(&j->nlocal, j->dev);
    if (rc == GCOMM_SUCCESS) rc = gcomm_job_gpus(&j->ngpus, &j->first);
    return rc;
}

/* gcomm_finalize, then MPI_Finalize under MPI. */
static inline int app_job_finalize(app_job_t *j)
{
    int rc = gcomm_finalize();
#if defined(APP_WITH_MPI)
    if (j->mpi) MPI_Finalize();
#else
    (void)j;
#endif
    return rc;
}

/* Job-wide reductions of one value (every process gets the result; one process: the value). */
typedef enum { APP_JOB_MAX, APP_JOB_SUM, APP_JOB_MIN } app_job_op_t;

static inline double app_job_reduce(const app_job_t *j, double v, app_job_op_t op)
{
#if defined(APP_WITH_MPI)
    if (j->mpi)
        MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE,
                      op == APP_JOB_MAX ? MPI_MAX : op == APP_JOB_SUM ? MPI_SUM : MPI_MIN,
                      MPI_COMM_WORLD);
#else
    (void)j;
    (void)op;
#endif
    return v;
}

static inline double app_job_max(const app_job_t *j, double v)
{
    return app_job_reduce(j, v, APP_JOB_MAX);
}

/* (counts up to 2^53 are exact in a double) */
static inline long app_job_sum_long(const app_job_t *j, long v)
{
    return (long)app_job_reduce(j, (double)v, APP_JOB_SUM);
}

static inline long app_job_min_long(const app_job_t *j, long v)
{
    return (long)app_job_reduce(j, (double)v, APP_JOB_MIN);
}

/* Every process's exit status agrees: nonzero if any process's is. */
static inline int app_job_any(const app_job_t *j, int v)
{
    return app_job_reduce(j, v != 0, APP_JOB_MAX) != 0;
}

#endif /* GCOMM_APPS_APP_JOB_H */
