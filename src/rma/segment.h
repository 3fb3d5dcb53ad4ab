/* What every launch of ranks shares, whether the ranks are GPU blocks (launch.c) or host threads
 * (host_ranks.c): the parameters from the configuration, the segment layout, the wait reports of
 * stopped ranks, and the status a launch returns. Free of CUDA. */
#ifndef GCOMM_RMA_SEGMENT_H
#define GCOMM_RMA_SEGMENT_H

#include <stdint.h>

#include "gcomm/detail/rt.h"
#include "rma/bootstrap.h"

/* How the ranks of one GPU (or of one process's host ranks) ended. */
typedef struct {
    int32_t abort;      /* the abort word: -GCOMM_ERR_* or 0 */
    int32_t cuda_error; /* the kernel failed (cudaError_t), 0 if not */
    gcommi_error_t error;
} gcommi_launch_result_t;

/* Fills the configured parts of a launch parameter (version, queue depth, pending capacity,
 * timeout) and counts the launch. */
void gcommi_param_defaults(gcommi_param_t *p, uint32_t launch_id);

/* Lays out the segment (offsets, size) for p->world_size ranks over p->ngpus GPUs with at most
 * maxlocal ranks on one. */
void gcommi_segment_layout(gcommi_param_t *p, int maxlocal);

/* ---- the proxy's delivery, shared by host ranks (host_ranks.c) and GPU ranks (proxy_gpu.c) ---- */

/* The entry of rank `target` in world window `win`, from the copy of the window table in segment
 * `g` of p, checked: target one of the ranks [lo, hi) of this process, [offset, offset + bytes)
 * inside its window. */
int gcommi_proxy_window(const gcommi_param_t *p, int g, int32_t lo, int32_t hi, int32_t target,
                        int32_t win, uint64_t offset, size_t bytes,
                        const gcommi_win_entry_t **entry);

/* The proxy as the producer of the lane from (remote) GPU `sg` into rank `target`: reserves a slot
 * with the lane's counter in sg's shadow segment and waits for the credit the target rank returns
 * there (up to p->timeout_ns). */
int gcommi_proxy_lane_reserve(const gcommi_param_t *p, int sg, int32_t target, uint32_t *slot);

/* ... and publishes (source, tag, win) into `ring`, the lane's ring, where the host can store
 * (a host rank's). */
int gcommi_proxy_lane_publish(const gcommi_param_t *p, int sg, uint64_t *ring, int32_t target,
                              int32_t source, int32_t win, int32_t tag);

/* Prints what every stopped rank of GPU p->gpu (host != 0: of this process's host ranks) was
 * waiting for; r: its p->nlocal reports. */
void gcommi_print_reports(const gcommi_param_t *p, const gcommi_report_t *r, int host);

/* One status for the results of `ngpus` GPUs (the same on every process), with its detail;
 * `what` names a GPU in messages ("GPU" or "host"), numbered from `first`. */
int gcommi_launch_status(const gcommi_launch_result_t *res, int ngpus, const char *what,
                         int first);

/* Every process runs the same sequence of collectives whatever fails locally: after each phase
 * of a launch the processes agree on its status (st: this process's), and a failure anywhere
 * sends every process out with an error that names it. */
int gcommi_launch_agree(gcommi_bootstrap_t *boot, int st);

/* The name of an operation in reports. */
const char *gcommi_op_name(int op);

#endif /* GCOMM_RMA_SEGMENT_H */
