/* Kernels whose register counts CTest holds to a budget (test_register_budget_*, compiled by
 * register_budget.cmake with ptxas -v; no GPU needed). The device API is inlined into the user's
 * kernel and a kernel's register count is its most crowded point, wherever it is, so a change in
 * a rarely run path (a barrier's polling loop) can halve the ranks an SM holds, which is what
 * overlaps communication with computation: the inline notifications did, unnoticed, from 64 to
 * 137 registers in the overlap benchmark's lean kernel (docs/BENCHMARKS.md, "Registers").
 * The probe is the overlap benchmark's kernel body (window, barriers, two put_notify and a wait
 * per iteration); REGISTER_PROBE_LEAN compiles it as bench_overlap --lean does. */
#ifdef REGISTER_PROBE_LEAN
#define GCOMM_COPY_INFLIGHT 1
#endif
#include "overlap_kernel.cuh"

__global__ void k_register_probe(gcomm_param_t param, const double *cin, double *cout,
                                 const uint4 *msrc, uint4 *mdst, char *halo, kparams_t kp,
                                 kclock_t *clk, unsigned long long *trace)
{
    overlap_body(param, cin, cout, msrc, mdst, halo, kp, clk, trace);
}
