/* gcomm <-> MPI interoperability (library gcomm_mpi; the core library does not need MPI). */
#ifndef GCOMM_MPI_H
#define GCOMM_MPI_H

#include <mpi.h>

#include "gcomm/datatype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Builds the gcomm equivalent of any MPI datatype, named or derived, committed or not, by decoding
 * it with MPI_Type_get_envelope / MPI_Type_get_contents (every combiner that can report: DUP,
 * CONTIGUOUS, VECTOR, HVECTOR, INDEXED, HINDEXED, INDEXED_BLOCK, HINDEXED_BLOCK, STRUCT, SUBARRAY,
 * DARRAY, RESIZED). The result is not committed; free it with gcomm_type_free. Named types without
 * a gcomm equivalent (e.g. MPI_LONG_DOUBLE) return GCOMM_ERR_UNSUPPORTED. */
int gcomm_type_from_mpi(MPI_Datatype mpitype, gcomm_datatype *newtype);

/* Initialises gcomm with the processes of `comm` as one job (collective over comm; MPI must be
 * initialised). Each process drives one GPU: its rank among the processes of its node, modulo the
 * node's visible GPUs (or GCOMM_DEVICES). GPUs of other processes on the node are reached through
 * CUDA IPC. gcomm_finalize must be called before MPI_Finalize. */
int gcomm_init_mpi(MPI_Comm comm);

#ifdef __cplusplus
}
#endif

#endif /* GCOMM_MPI_H */
