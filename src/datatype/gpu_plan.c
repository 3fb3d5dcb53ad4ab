/* The GPU engine on the host side: chooses a plan per (type, device) from the committed layout,
 * uploads what the kernels need once (the layout, the work units) and caches it in the type, and
 * launches the copies. Only CUDA's C runtime API is used here; kernels are in gpu_kernels.cu. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/error.h"
#include "datatype/gpu.h"
#include "datatype/gpu_plan.h"
#include "datatype/type.h"

static pthread_mutex_t gcommi_plan_lock = PTHREAD_MUTEX_INITIALIZER;

static int cuda_error(cudaError_t e, const char *what)
{
    return GCOMMI_ERROR(GCOMM_ERR_CUDA, "%s: %s", what, cudaGetErrorString(e));
}

/* ---- work units ------------------------------------------------------------------------------- */

typedef struct {
    int64_t *v; /* triples */
    int64_t n, cap;
    int64_t packed; /* packed bytes emitted so far */
    int oom;
} units_t;

static void units_push(units_t *u, int64_t typed, int64_t len)
{
    /* Merge with the previous unit when both sides continue it and it is not full. */
    if (u->n > 0) {
        int64_t *last = u->v + 3 * (u->n - 1);
        if (last[0] + last[2] == typed && last[2] + len <= GCOMMI_GPU_UNIT_MAX) {
            last[2] += len;
            u->packed += len;
            return;
        }
    }
    while (len > 0) {
        if (u->n == u->cap) {
            int64_t cap = u->cap ? 2 * u->cap : 1024;
            int64_t *v = realloc(u->v, (size_t)cap * 3 * sizeof(int64_t));
            if (!v) {
                u->oom = 1;
                return;
            }
            u->v = v;
            u->cap = cap;
        }
        int64_t take = len < GCOMMI_GPU_UNIT_MAX ? len : GCOMMI_GPU_UNIT_MAX;
        int64_t *w = u->v + 3 * u->n++;
        w[0] = typed;
        w[1] = u->packed;
        w[2] = take;
        u->packed += take;
        typed += take;
        len -= take;
    }
}

/* Emits the runs of one instance of node n with origin `origin`, in packed order. */
static void units_walk(const gcommi_layout_t *L, const gcommi_dl_t *n, int64_t origin, units_t *u)
{
    int64_t base = origin + n->disp;
    switch (n->kind) {
    case GCOMMI_DL_RUN: units_push(u, base, n->size); return;
    case GCOMMI_DL_VEC:
        for (int64_t i = 0; i < n->count && !u->oom; i++)
            units_walk(L, &L->nodes[n->child], base + i * n->stride, u);
        return;
    case GCOMMI_DL_IDX: {
        const int64_t *displs = L->aux + n->aux, *prefix = displs + n->count;
        const gcommi_dl_t *c = &L->nodes[n->child];
        if (c->kind == GCOMMI_DL_RUN && c->size == n->stride) { /* each block is one run */
            for (int64_t b = 0; b < n->count && !u->oom; b++)
                units_push(u, base + displs[b] + c->disp, (prefix[b + 1] - prefix[b]) * c->size);
            return;
        }
        for (int64_t b = 0; b < n->count && !u->oom; b++)
            for (int64_t j = prefix[b]; j < prefix[b + 1] && !u->oom; j++)
                units_walk(L, &L->nodes[n->child], base + displs[b] + (j - prefix[b]) * n->stride,
                           u);
        return;
    }
    default: {
        const int64_t *member = L->aux + n->aux + n->count + 1;
        for (int64_t m = 0; m < n->count && !u->oom; m++)
            units_walk(L, &L->nodes[member[m]], base, u);
        return;
    }
    }
}

/* Alignment of everything a located word depends on (POINT plans and relayout). */
/* ---- plans ------------------------------------------------------------------------------------ */

/* Limits of the irregular-unit plan: beyond them the list costs more than it saves. */
#define GCOMMI_UNITS_MAX ((int64_t)1 << 22)
#define GCOMMI_UNITS_MIN_AVG 64

static void plan_free(gcommi_gpu_plan_t *p)
{
    if (!p) return;
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur != p->device) cudaSetDevice(p->device);
    cudaFree((void *)p->units);
    cudaFree((void *)p->nodes);
    cudaFree((void *)p->aux);
    if (cur >= 0 && cur != p->device) cudaSetDevice(cur);
    free(p);
}

static int upload(const void *src, size_t bytes, void **dst)
{
    cudaError_t e = cudaMalloc(dst, bytes ? bytes : 1);
    if (e != cudaSuccess) return cuda_error(e, "cudaMalloc of a type's device copy");
    if (bytes && (e = cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice)) != cudaSuccess)
        return cuda_error(e, "cudaMemcpy of a type's device copy");
    return GCOMM_SUCCESS;
}

/* A cudaMemcpy from pageable memory may return before the bytes reach the device; the first
 * kernel of a type may run on another (non-blocking) stream, so wait for the uploads here, once
 * per type and device. (Hence a type's first use on a device must not be inside stream capture.) */
static int uploads_done(void)
{
    cudaError_t e = cudaStreamSynchronize(cudaStreamLegacy);
    return e == cudaSuccess ? GCOMM_SUCCESS : cuda_error(e, "waiting for a type's device copy");
}

/* Builds the plan of a committed type for the current device. */
static int plan_build(gcomm_datatype type, int device, gcommi_gpu_plan_t **out)
{
    const gcommi_layout_t *L = gcommi_type_layout(type);
    gcommi_gpu_plan_t *p = calloc(1, sizeof(*p));
    if (!p) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate a GPU plan");
    p->device = device;
    p->size = L->size;
    p->extent = L->extent;
    int rc = GCOMM_SUCCESS;
    cudaError_t ae = cudaDeviceGetAttribute(&p->sms, cudaDevAttrMultiProcessorCount, device);
    if (ae != cudaSuccess) {
        free(p);
        return cuda_error(ae, "cudaDeviceGetAttribute(multiprocessors)");
    }

    /* The layout goes to the device in every case (point kernels and relayout read it). */
    if ((rc = upload(L->nodes, (size_t)L->nnodes * sizeof(gcommi_dl_t), (void **)&p->nodes)) ||
        (rc = upload(L->aux, (size_t)L->naux * sizeof(int64_t), (void **)&p->aux)))
        goto err;
    p->point_align = gcommi_pow2_align(gcommi_layout_gcd(L));

    /* Nested vectors over one run? (Always our kernel, never cudaMemcpy2D/3D: measured on an H200,
     * docs/BENCHMARKS.md, our kernel is 1.4-3.4x a 2-D copy of the same vector shape and 2.7-20x
     * iterated 3-D copies of 4-D subarrays.) */
    const gcommi_dl_t *n = &L->nodes[0];
    int64_t disp = n->disp, g = 0;
    int nd = 0;
    while (n->kind == GCOMMI_DL_VEC && nd < GCOMMI_GPU_MAX_DIMS) {
        p->counts[nd] = n->count;
        p->strides[nd] = n->stride;
        g = gcommi_gcd64(g, n->stride);
        nd++;
        n = &L->nodes[n->child];
        disp += n->disp;
    }
    if ((rc = uploads_done())) goto err;
    if (n->kind == GCOMMI_DL_RUN) {
        p->kind = (nd == 0 && n->size == L->extent) ? GCOMMI_PLAN_CONTIG : GCOMMI_PLAN_STRIDED;
        p->ndims = nd;
        p->run = n->size;
        p->disp = disp;
        p->align = gcommi_pow2_align(gcommi_gcd64(g, gcommi_gcd64(disp, gcommi_gcd64(n->size, L->extent))));
        *out = p;
        return GCOMM_SUCCESS;
    }

    /* Irregular: long runs become work units, anything else is located word by word. */
    if (L->nruns <= GCOMMI_UNITS_MAX && L->size / (L->nruns ? L->nruns : 1) >= GCOMMI_UNITS_MIN_AVG) {
        units_t u = {0};
        units_walk(L, &L->nodes[0], 0, &u);
        if (u.oom) {
            free(u.v);
            rc = GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate the work units of a type");
            goto err;
        }
        int64_t ga = gcommi_gcd64(L->extent, L->size);
        for (int64_t i = 0; i < 3 * u.n; i++) ga = gcommi_gcd64(ga, u.v[i]);
        rc = upload(u.v, (size_t)u.n * 3 * sizeof(int64_t), (void **)&p->units);
        free(u.v);
        if (rc) goto err;
        if ((rc = uploads_done())) goto err;
        p->kind = GCOMMI_PLAN_UNITS;
        p->nunits = u.n;
        p->align = gcommi_pow2_align(ga);
        *out = p;
        return GCOMM_SUCCESS;
    }
    p->kind = GCOMMI_PLAN_POINT;
    p->align = p->point_align;
    *out = p;
    return GCOMM_SUCCESS;
err:
    plan_free(p);
    return rc;
}

/* The cached plan of a type on a device (built on first use). The caller has made `device`
 * current. */
static int plan_get(gcomm_datatype type, int device, gcommi_gpu_plan_t **out)
{
    if (device < 0 || device >= GCOMMI_TYPE_MAX_DEVICES)
        return GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "device %d is beyond the %d devices gcomm "
                            "supports", device, GCOMMI_TYPE_MAX_DEVICES);
    void *p = __atomic_load_n(&type->gpu_plans[device], __ATOMIC_ACQUIRE);
    if (p) {
        *out = p;
        return GCOMM_SUCCESS;
    }
    pthread_mutex_lock(&gcommi_plan_lock);
    int rc = GCOMM_SUCCESS;
    p = type->gpu_plans[device];
    if (!p) {
        gcommi_gpu_plan_t *plan = NULL;
        rc = plan_build(type, device, &plan);
        if (rc == GCOMM_SUCCESS) __atomic_store_n(&type->gpu_plans[device], plan, __ATOMIC_RELEASE);
        p = plan;
    }
    pthread_mutex_unlock(&gcommi_plan_lock);
    if (rc == GCOMM_SUCCESS) *out = p;
    return rc;
}

void gcommi_gpu_type_release(gcomm_datatype type)
{
    for (int d = 0; d < GCOMMI_TYPE_MAX_DEVICES; d++)
        if (type->gpu_plans[d]) plan_free(type->gpu_plans[d]);
}

int gcommi_gpu_type_view(gcomm_datatype type, int device, const void **nodes, const int64_t **aux,
                         int64_t *align)
{
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || device >= ndev)
        return GCOMMI_ERROR(GCOMM_ERR_NO_DEVICE, "device %d: %s", device,
                            e != cudaSuccess ? cudaGetErrorString(e) : "no such CUDA device");
    int cur = -1;
    if ((e = cudaGetDevice(&cur)) != cudaSuccess) return cuda_error(e, "cudaGetDevice");
    if (cur != device && (e = cudaSetDevice(device)) != cudaSuccess)
        return cuda_error(e, "cudaSetDevice");
    gcommi_gpu_plan_t *p;
    int rc = plan_get(type, device, &p);
    if (cur != device) cudaSetDevice(cur);
    if (rc) return rc;
    *nodes = p->nodes;
    *aux = p->aux;
    *align = p->point_align;
    return GCOMM_SUCCESS;
}

/* ---- launches --------------------------------------------------------------------------------- */

/* Makes `device` current for the scope of a call; restores the caller's device after. */
typedef struct {
    int prev;
} device_scope_t;

static int device_enter(int device, device_scope_t *s)
{
    s->prev = -1;
    cudaError_t e = cudaGetDevice(&s->prev);
    if (e != cudaSuccess) return cuda_error(e, "cudaGetDevice");
    if (s->prev != device && (e = cudaSetDevice(device)) != cudaSuccess)
        return cuda_error(e, "cudaSetDevice");
    return GCOMM_SUCCESS;
}

static void device_leave(int device, device_scope_t *s)
{
    if (s->prev >= 0 && s->prev != device) cudaSetDevice(s->prev);
}

static int max_blocks(const gcommi_gpu_plan_t *p, int requested)
{
    if (requested > 0) return requested;
    long cfg = gcommi_config()->pack_max_blocks;
    if (cfg > 0) return cfg > (1L << 30) ? (1 << 30) : (int)cfg;
    /* 16 blocks of 256 threads per SM: measured on an H200 (vector of 256-byte blocks, 256 MB):
     * 4 per SM 84%, 8 per SM 88%, 16 per SM 92% of cudaMemcpy (docs/BENCHMARKS.md). */
    return 16 * (p->sms > 0 ? p->sms : 1);
}

int gcommi_gpu_copy(gcomm_datatype type, int device, char *typed, size_t offset, size_t bytes,
                    char *packed, int pack, void *stream, int blocks)
{
    if (bytes == 0) return GCOMM_SUCCESS;
    device_scope_t scope;
    GCOMMI_CHECK(device_enter(device, &scope));
    gcommi_gpu_plan_t *p;
    int rc = plan_get(type, device, &p);
    if (rc) goto out;
    if (p->kind == GCOMMI_PLAN_CONTIG) {
        char *t = typed + p->disp + offset;
        cudaError_t e = cudaMemcpyAsync(pack ? packed : t, pack ? t : packed, bytes,
                                        cudaMemcpyDefault, (cudaStream_t)stream);
        if (e != cudaSuccess) rc = cuda_error(e, "cudaMemcpyAsync of a contiguous type");
        goto out;
    }
    int64_t g = gcommi_gcd64(p->align, gcommi_gcd64((int64_t)((uintptr_t)typed & 15), (int64_t)((uintptr_t)packed & 15)));
    g = gcommi_gcd64(g, gcommi_gcd64((int64_t)offset, (int64_t)bytes));
    int width = (int)gcommi_pow2_align(g);
    int e = gcommi_gpu_launch(p, typed, (int64_t)offset, (int64_t)bytes, packed, pack, width,
                              max_blocks(p, blocks), stream);
    if (e != cudaSuccess) rc = cuda_error((cudaError_t)e, "datatype kernel launch");
out:
    device_leave(device, &scope);
    return rc;
}

int gcommi_gpu_relayout(gcomm_datatype srctype, const char *src, gcomm_datatype dsttype,
                        char *dst, size_t bytes, int device, void *stream)
{
    if (bytes == 0) return GCOMM_SUCCESS;
    device_scope_t scope;
    GCOMMI_CHECK(device_enter(device, &scope));
    gcommi_gpu_plan_t *ps, *pd;
    int rc = plan_get(srctype, device, &ps);
    if (rc == GCOMM_SUCCESS) rc = plan_get(dsttype, device, &pd);
    if (rc == GCOMM_SUCCESS) {
        int64_t g = gcommi_gcd64(ps->point_align, pd->point_align);
        g = gcommi_gcd64(g, gcommi_gcd64((int64_t)((uintptr_t)src & 15), (int64_t)((uintptr_t)dst & 15)));
        g = gcommi_gcd64(g, (int64_t)bytes);
        int e = gcommi_gpu_launch_relayout(ps, src, pd, dst, (int64_t)bytes, (int)gcommi_pow2_align(g),
                                           max_blocks(ps, 0), stream);
        if (e != cudaSuccess) rc = cuda_error((cudaError_t)e, "relayout kernel launch");
    }
    device_leave(device, &scope);
    return rc;
}

int gcommi_gpu_enable_peer(int device, int peer)
{
    if (device == peer) return GCOMM_SUCCESS;
    int can = 0;
    cudaError_t e = cudaDeviceCanAccessPeer(&can, device, peer);
    if (e != cudaSuccess) return cuda_error(e, "cudaDeviceCanAccessPeer");
    if (!can)
        return GCOMMI_ERROR(GCOMM_ERR_UNSUPPORTED, "device %d cannot access the memory of device "
                            "%d (no peer access): stage through host memory instead", device, peer);
    device_scope_t scope;
    GCOMMI_CHECK(device_enter(device, &scope));
    e = cudaDeviceEnablePeerAccess(peer, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();
        e = cudaSuccess;
    }
    device_leave(device, &scope);
    return e == cudaSuccess ? GCOMM_SUCCESS : cuda_error(e, "cudaDeviceEnablePeerAccess");
}

/* ---- staging helpers -------------------------------------------------------------------------- */

int gcommi_gpu_alloc(int device, size_t bytes, void *stream, void **ptr)
{
    device_scope_t scope;
    GCOMMI_CHECK(device_enter(device, &scope));
    cudaError_t e = cudaMallocAsync(ptr, bytes, (cudaStream_t)stream);
    device_leave(device, &scope);
    return e == cudaSuccess ? GCOMM_SUCCESS : cuda_error(e, "cudaMallocAsync of a staging buffer");
}

int gcommi_gpu_free(int device, void *ptr, void *stream)
{
    device_scope_t scope;
    GCOMMI_CHECK(device_enter(device, &scope));
    cudaError_t e = cudaFreeAsync(ptr, (cudaStream_t)stream);
    device_leave(device, &scope);
    return e == cudaSuccess ? GCOMM_SUCCESS : cuda_error(e, "cudaFreeAsync of a staging buffer");
}

int gcommi_gpu_memcpy_sync(int device, void *dst, const void *src, size_t bytes, int dir,
                           void *stream)
{
    device_scope_t scope;
    GCOMMI_CHECK(device_enter(device, &scope));
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes,
                                    dir ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice,
                                    (cudaStream_t)stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize((cudaStream_t)stream);
    device_leave(device, &scope);
    return e == cudaSuccess ? GCOMM_SUCCESS : cuda_error(e, "staging copy");
}

int gcommi_gpu_sync(int device, void *stream)
{
    device_scope_t scope;
    GCOMMI_CHECK(device_enter(device, &scope));
    cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
    device_leave(device, &scope);
    return e == cudaSuccess ? GCOMM_SUCCESS : cuda_error(e, "cudaStreamSynchronize");
}
