/* The public pack/unpack/copy entry points: argument checks, then the engine for where the bytes
 * are. Every check happens before the first byte is written, so a failing call writes nothing. */
#include <stdlib.h>

#include "common/error.h"
#include "common/memkind.h"
#include "datatype/gpu.h"
#include "datatype/pack_host.h"
#include "datatype/type.h"

/* Bounce buffer size of gcomm_copy on the host: large enough to amortise the per-range descent,
 * small enough to stay in L2. */
#define GCOMMI_COPY_CHUNK ((size_t)256 << 10)

int gcomm_pack_size(size_t incount, gcomm_datatype type, size_t *size)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(gcommi_type_check(type, "type"));
    if (!size) return GCOMMI_ERROR(GCOMM_ERR_ARG, "size is NULL");
    return gcommi_type_bytes(type, incount, "incount", size);
}

/* Checks shared by the position-based calls; returns the packed byte count in *bytes. */
static int check_position_call(const void *typed, const char *typed_name, size_t count,
                               gcomm_datatype type, const void *packed, const char *packed_name,
                               size_t packed_size, const size_t *position, int unpacking,
                               size_t *bytes)
{
    GCOMMI_CHECK(gcommi_type_check_committed(type, "type"));
    if (!position) return GCOMMI_ERROR(GCOMM_ERR_ARG, "position is NULL");
    GCOMMI_CHECK(gcommi_type_bytes(type, count, unpacking ? "outcount" : "incount", bytes));
    if (*position > packed_size)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "*position = %zu is beyond %s = %zu", *position,
                            unpacking ? "insize" : "outsize", packed_size);
    if (*bytes == 0) return GCOMM_SUCCESS;
    if (!typed)
        return GCOMMI_ERROR(GCOMM_ERR_BUFFER, "%s is NULL with %zu bytes to %s", typed_name,
                            *bytes, unpacking ? "unpack" : "pack");
    if (!packed)
        return GCOMMI_ERROR(GCOMM_ERR_BUFFER, "%s is NULL with %zu bytes to %s", packed_name,
                            *bytes, unpacking ? "unpack" : "pack");
    if (packed_size - *position < *bytes)
        return GCOMMI_ERROR(GCOMM_ERR_TRUNCATE,
                            "%s needs %zu bytes at position %zu but %s = %zu",
                            unpacking ? "unpack" : "pack", *bytes, *position,
                            unpacking ? "insize" : "outsize", packed_size);
    return GCOMM_SUCCESS;
}

static int is_gpu_memory(gcommi_memkind_t k)
{
    return k == GCOMMI_MEM_DEVICE || k == GCOMMI_MEM_MANAGED;
}

/* The kinds of two buffers, asking CUDA as little as possible (170-210 ns a question on an H200
 * machine's host): a buffer known to be host memory (gcommi_memkind_known_host) is asked about
 * only when the other one is GPU memory, where pinned host memory takes another path than
 * pageable memory. */
static void memkinds(const void *a, gcommi_memkind_t *ka, int *da, const void *b,
                     gcommi_memkind_t *kb, int *db)
{
    const int host_a = gcommi_memkind_known_host(a), host_b = gcommi_memkind_known_host(b);
    *ka = *kb = GCOMMI_MEM_HOST;
    *da = *db = -1;
    if (!host_a) *ka = gcommi_memkind(a, da);
    if (!host_b) *kb = gcommi_memkind(b, db);
    const int gpu = is_gpu_memory(*ka) || is_gpu_memory(*kb);
    if (gpu && host_a) *ka = gcommi_memkind(a, da);
    if (gpu && host_b) *kb = gcommi_memkind(b, db);
}

/* Moves packed bytes [offset, offset + bytes) between typed memory and a packed buffer with the
 * engine for where the memory is: the CPU when both sides are host memory; GPU kernels when a side
 * is GPU memory (kernels reach device, managed and mapped pinned host memory directly, e.g. a pack
 * from the GPU straight into pinned host memory); a staging copy through a temporary buffer when
 * the other side is pageable host memory. `sync`: wait for the GPU before returning. */
static int engine_copy(gcomm_datatype type, char *typed, size_t offset, size_t bytes,
                       size_t op_bytes, char *packed, int pack, void *stream, int sync,
                       int max_blocks)
{
    int dt, dp;
    gcommi_memkind_t kt, kp;
    /* The typed buffer's origin may lie outside its allocation (lb > 0 or negative displacements):
     * ask about the first byte of data instead. */
    memkinds(typed + type->bounds.true_lb, &kt, &dt, packed, &kp, &dp);
    int t_gpu = is_gpu_memory(kt);
    int p_gpu = is_gpu_memory(kp);
    if (!t_gpu && !p_gpu) {
        /* Host memory on both sides. An asynchronous call keeps stream order: earlier work on
         * the stream (a copy into this pinned buffer, say) completes first. */
        if (stream && gcommi_gpu_count() > 0) GCOMMI_CHECK(gcommi_gpu_sync(0, stream));
        gcommi_host_copy(gcommi_type_layout(type), typed, offset, bytes, packed, pack, op_bytes);
        return GCOMM_SUCCESS;
    }
    int device = t_gpu ? dt : dp;
    if (t_gpu && p_gpu && dt != dp) /* the kernel on the typed side's GPU reaches the peer's */
        GCOMMI_CHECK(gcommi_gpu_enable_peer(dt, dp));
    if (kt != GCOMMI_MEM_HOST && kp != GCOMMI_MEM_HOST) {
        GCOMMI_CHECK(gcommi_gpu_copy(type, device, typed, offset, bytes, packed, pack, stream,
                                     max_blocks));
        return sync ? gcommi_gpu_sync(device, stream) : GCOMM_SUCCESS;
    }
    int rc;
    if (t_gpu) { /* packed side is pageable host memory: stage it in device memory */
        void *tmp;
        GCOMMI_CHECK(gcommi_gpu_alloc(device, bytes, stream, &tmp));
        if (pack) {
            rc = gcommi_gpu_copy(type, device, typed, offset, bytes, tmp, 1, stream, max_blocks);
            if (rc == GCOMM_SUCCESS)
                rc = gcommi_gpu_memcpy_sync(device, packed, tmp, bytes, 1, stream);
        } else {
            rc = gcommi_gpu_memcpy_sync(device, tmp, packed, bytes, 0, stream);
            if (rc == GCOMM_SUCCESS)
                rc = gcommi_gpu_copy(type, device, typed, offset, bytes, tmp, 0, stream,
                                     max_blocks);
        }
        int rc2 = gcommi_gpu_free(device, tmp, stream);
        if (rc == GCOMM_SUCCESS) rc = rc2;
        if (rc == GCOMM_SUCCESS && sync) rc = gcommi_gpu_sync(device, stream);
        return rc;
    }
    /* typed side is pageable host memory: pack on the CPU, stage the packed bytes */
    char *tmp = malloc(bytes);
    if (!tmp)
        return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate a %zu-byte staging buffer", bytes);
    if (pack) {
        gcommi_host_copy(gcommi_type_layout(type), typed, offset, bytes, tmp, 1, op_bytes);
        rc = gcommi_gpu_memcpy_sync(device, packed, tmp, bytes, 0, stream);
    } else {
        rc = gcommi_gpu_memcpy_sync(device, tmp, packed, bytes, 1, stream);
        if (rc == GCOMM_SUCCESS)
            gcommi_host_copy(gcommi_type_layout(type), typed, offset, bytes, tmp, 0, op_bytes);
    }
    free(tmp);
    return rc;
}

/* The position-based calls, synchronous (sync) or on a stream. */
static int pack_at_position(const void *inbuf, size_t incount, gcomm_datatype type, void *outbuf,
                            size_t outsize, size_t *position, void *stream, int sync)
{
    size_t bytes;
    GCOMMI_CHECK(check_position_call(inbuf, "inbuf", incount, type, outbuf, "outbuf", outsize,
                                     position, 0, &bytes));
    if (bytes == 0) return GCOMM_SUCCESS;
    GCOMMI_CHECK(engine_copy(type, (char *)inbuf, 0, bytes, bytes, (char *)outbuf + *position, 1,
                             stream, sync, 0));
    *position += bytes;
    return GCOMM_SUCCESS;
}

static int unpack_at_position(const void *inbuf, size_t insize, size_t *position, void *outbuf,
                              size_t outcount, gcomm_datatype type, void *stream, int sync)
{
    size_t bytes;
    GCOMMI_CHECK(check_position_call(outbuf, "outbuf", outcount, type, inbuf, "inbuf", insize,
                                     position, 1, &bytes));
    if (bytes == 0) return GCOMM_SUCCESS;
    GCOMMI_CHECK(engine_copy(type, (char *)outbuf, 0, bytes, bytes, (char *)inbuf + *position, 0,
                             stream, sync, 0));
    *position += bytes;
    return GCOMM_SUCCESS;
}

int gcomm_pack(const void *inbuf, size_t incount, gcomm_datatype type, void *outbuf,
               size_t outsize, size_t *position)
{
    GCOMMI_API_ENTRY();
    return pack_at_position(inbuf, incount, type, outbuf, outsize, position, NULL, 1);
}

int gcomm_unpack(const void *inbuf, size_t insize, size_t *position, void *outbuf,
                 size_t outcount, gcomm_datatype type)
{
    GCOMMI_API_ENTRY();
    return unpack_at_position(inbuf, insize, position, outbuf, outcount, type, NULL, 1);
}

/* Checks shared by the range calls. */
static int check_range_call(const void *typed, const char *typed_name, size_t count,
                            const char *count_name, gcomm_datatype type, size_t offset,
                            size_t bytes, const void *packed, const char *packed_name,
                            size_t *total_out)
{
    GCOMMI_CHECK(gcommi_type_check_committed(type, "type"));
    size_t total;
    GCOMMI_CHECK(gcommi_type_bytes(type, count, count_name, &total));
    *total_out = total;
    if (offset > total || bytes > total - offset)
        return GCOMMI_ERROR(GCOMM_ERR_ARG,
                            "range [%zu, %zu + %zu) is beyond the %zu packed bytes of %s = %zu",
                            offset, offset, bytes, total, count_name, count);
    if (bytes == 0) return GCOMM_SUCCESS;
    if (!typed)
        return GCOMMI_ERROR(GCOMM_ERR_BUFFER, "%s is NULL with %zu bytes", typed_name, bytes);
    if (!packed)
        return GCOMMI_ERROR(GCOMM_ERR_BUFFER, "%s is NULL with %zu bytes", packed_name, bytes);
    return GCOMM_SUCCESS;
}

/* The four range calls: the plain forms are the option forms with GCOMM_PACK_OPTS_INIT. */
static int range_with_opts(char *typed, const char *typed_name, size_t count,
                           const char *count_name, gcomm_datatype type, size_t offset, size_t bytes,
                           char *packed, const char *packed_name, int pack,
                           const gcomm_pack_opts_t *opts)
{
    const gcomm_pack_opts_t o = opts ? *opts : (gcomm_pack_opts_t)GCOMM_PACK_OPTS_INIT;
    if (o.max_blocks < 0)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "opts->max_blocks = %d is negative", o.max_blocks);
    size_t total;
    GCOMMI_CHECK(check_range_call(typed, typed_name, count, count_name, type, offset, bytes,
                                  packed, packed_name, &total));
    if (bytes == 0) return GCOMM_SUCCESS;
    /* the CPU's loops are those of the whole stream the range is part of (gcommi_host_copy) */
    return engine_copy(type, typed, offset, bytes, total, packed, pack, o.stream, o.wait,
                       o.max_blocks);
}

int gcomm_pack_range(const void *inbuf, size_t incount, gcomm_datatype type, size_t offset,
                     size_t bytes, void *outbuf)
{
    GCOMMI_API_ENTRY();
    return range_with_opts((char *)inbuf, "inbuf", incount, "incount", type, offset, bytes,
                           outbuf, "outbuf", 1, NULL);
}

int gcomm_unpack_range(const void *inbuf, size_t offset, size_t bytes, void *outbuf,
                       size_t outcount, gcomm_datatype type)
{
    GCOMMI_API_ENTRY();
    return range_with_opts(outbuf, "outbuf", outcount, "outcount", type, offset, bytes,
                           (char *)inbuf, "inbuf", 0, NULL);
}

int gcomm_pack_range_opts(const void *inbuf, size_t incount, gcomm_datatype type, size_t offset,
                          size_t bytes, void *outbuf, const gcomm_pack_opts_t *opts)
{
    GCOMMI_API_ENTRY();
    return range_with_opts((char *)inbuf, "inbuf", incount, "incount", type, offset, bytes,
                           outbuf, "outbuf", 1, opts);
}

int gcomm_unpack_range_opts(const void *inbuf, size_t offset, size_t bytes, void *outbuf,
                            size_t outcount, gcomm_datatype type, const gcomm_pack_opts_t *opts)
{
    GCOMMI_API_ENTRY();
    return range_with_opts(outbuf, "outbuf", outcount, "outcount", type, offset, bytes,
                           (char *)inbuf, "inbuf", 0, opts);
}

int gcomm_pack_async(const void *inbuf, size_t incount, gcomm_datatype type, void *outbuf,
                     size_t outsize, size_t *position, void *stream)
{
    GCOMMI_API_ENTRY();
    return pack_at_position(inbuf, incount, type, outbuf, outsize, position, stream, 0);
}

int gcomm_unpack_async(const void *inbuf, size_t insize, size_t *position, void *outbuf,
                       size_t outcount, gcomm_datatype type, void *stream)
{
    GCOMMI_API_ENTRY();
    return unpack_at_position(inbuf, insize, position, outbuf, outcount, type, stream, 0);
}

int gcomm_copy(const void *src, size_t srccount, gcomm_datatype srctype, void *dst,
               size_t dstcount, gcomm_datatype dsttype, void *stream)
{
    GCOMMI_API_ENTRY();
    GCOMMI_CHECK(gcommi_type_check_committed(srctype, "srctype"));
    GCOMMI_CHECK(gcommi_type_check_committed(dsttype, "dsttype"));
    size_t bytes, room;
    GCOMMI_CHECK(gcommi_type_bytes(srctype, srccount, "srccount", &bytes));
    GCOMMI_CHECK(gcommi_type_bytes(dsttype, dstcount, "dstcount", &room));
    int match;
    GCOMMI_CHECK(gcomm_type_match(srctype, srccount, dsttype, dstcount, &match));
    if (!match)
        return GCOMMI_ERROR(GCOMM_ERR_TYPE_MISMATCH,
                            "the signature of srccount = %zu x srctype is not a prefix of that "
                            "of dstcount = %zu x dsttype", srccount, dstcount);
    if (bytes == 0) return GCOMM_SUCCESS;
    if (!src) return GCOMMI_ERROR(GCOMM_ERR_BUFFER, "src is NULL with %zu bytes", bytes);
    if (!dst) return GCOMMI_ERROR(GCOMM_ERR_BUFFER, "dst is NULL with %zu bytes", bytes);
    int ds, dd;
    gcommi_memkind_t ks, kd;
    memkinds((const char *)src + srctype->bounds.true_lb, &ks, &ds,
             (char *)dst + dsttype->bounds.true_lb, &kd, &dd);
    const int s_gpu = is_gpu_memory(ks), d_gpu = is_gpu_memory(kd);
    if ((s_gpu || d_gpu) && ks != GCOMMI_MEM_HOST && kd != GCOMMI_MEM_HOST) {
        /* One kernel on the GPU that owns the destination (or the source): no packed stream. */
        int device = d_gpu ? dd : ds;
        if (ds >= 0 && dd >= 0 && ds != dd) GCOMMI_CHECK(gcommi_gpu_enable_peer(dd, ds));
        GCOMMI_CHECK(gcommi_gpu_relayout(srctype, src, dsttype, dst, bytes, device, stream));
        return stream ? GCOMM_SUCCESS : gcommi_gpu_sync(device, stream);
    }
    if (s_gpu || d_gpu) {
        /* GPU memory on one side, pageable host memory on the other: through a packed copy. */
        char *tmp = malloc(bytes);
        if (!tmp) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate %zu bytes", bytes);
        int rc = engine_copy(srctype, (char *)src, 0, bytes, bytes, tmp, 1, stream, 1, 0);
        if (rc == GCOMM_SUCCESS)
            rc = engine_copy(dsttype, dst, 0, bytes, bytes, tmp, 0, stream, 1, 0);
        free(tmp);
        return rc;
    }
    const gcommi_layout_t *ls = gcommi_type_layout(srctype), *ld = gcommi_type_layout(dsttype);
    /* A side that is its own packed stream needs no bounce buffer: one unpack from it, or one
     * pack into it, with the loops of the whole operation. A 1449 x 1449 transpose from or to a
     * contiguous matrix on machine D (2026-11-30, medians of 15, three alternating rounds):
     * 4.05-4.27 -> 2.75-3.15 ms one way, 4.60-5.00 -> 3.15-3.62 ms the other; 362 x 362 68 -> 39
     * us. The bytes are not copied through a buffer, so src and dst must not overlap. */
    char *flat_src = gcommi_host_contiguous(ls, (char *)src);
    char *flat_dst = gcommi_host_contiguous(ld, dst);
    if (flat_src) {
        gcommi_host_copy(ld, dst, 0, bytes, flat_src, 0, bytes);
        return GCOMM_SUCCESS;
    }
    if (flat_dst) {
        gcommi_host_copy(ls, (char *)src, 0, bytes, flat_dst, 1, bytes);
        return GCOMM_SUCCESS;
    }
    /* Chunks of whole granules (gcommi_host_granule) of one side, the larger that fits a chunk,
     * so that no chunk cuts a column of a transpose and walks it down the rows on its own. */
    size_t chunk = bytes < GCOMMI_COPY_CHUNK ? bytes : GCOMMI_COPY_CHUNK;
    const size_t gs = (size_t)gcommi_host_granule(ls), gd = (size_t)gcommi_host_granule(ld);
    const size_t big = gs > gd ? gs : gd, small = gs > gd ? gd : gs;
    const size_t g = big <= chunk ? big : small;
    if (bytes > chunk && g > 0 && g <= chunk) chunk = chunk / g * g;
    char *bounce = malloc(chunk);
    if (!bounce) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate %zu bytes", chunk);
    /* A chunk's pack takes the loops of a chunk: the bounce buffer stays in the cache between the
     * pack and the unpack that reads it, where streaming stores would send it to memory. Its
     * unpack takes those of the whole copy, which write the destination as a whole unpack does
     * (streaming stores past the caches). Both together, the same transpose to and from a
     * matrix with rows 64 bytes longer: 4.21-4.26 -> 4.00-4.33 ms and 4.52-4.67 -> 3.73-4.21 ms;
     * 362 x 362 1.04-1.06x. */
    for (size_t off = 0; off < bytes; off += chunk) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        gcommi_host_copy(ls, (char *)src, off, n, bounce, 1, n);
        gcommi_host_copy(ld, dst, off, n, bounce, 0, bytes);
    }
    free(bounce);
    return GCOMM_SUCCESS;
}
