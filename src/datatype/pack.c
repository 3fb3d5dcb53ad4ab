/* The public pack/unpack/copy entry points: argument checks, then the engine for where the bytes
 * are. Every check happens before the first byte is written, so a failing call writes nothing. */
#include <stdlib.h>

#include "common/error.h"
#include "datatype/pack_host.h"
#include "datatype/type.h"

/* Bounce buffer size of gcomm_copy on the host: large enough to amortise the per-range descent,
 * small enough to stay in L2. */
#define GCOMMI_COPY_CHUNK ((size_t)256 << 10)

int gcomm_pack_size(size_t incount, gcomm_datatype type, size_t *size)
{
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

int gcomm_pack(const void *inbuf, size_t incount, gcomm_datatype type, void *outbuf,
               size_t outsize, size_t *position)
{
    size_t bytes;
    GCOMMI_CHECK(check_position_call(inbuf, "inbuf", incount, type, outbuf, "outbuf", outsize,
                                     position, 0, &bytes));
    if (bytes == 0) return GCOMM_SUCCESS;
    gcommi_host_copy(gcommi_type_layout(type), (char *)inbuf, 0, bytes, (char *)outbuf + *position,
                     1);
    *position += bytes;
    return GCOMM_SUCCESS;
}

int gcomm_unpack(const void *inbuf, size_t insize, size_t *position, void *outbuf,
                 size_t outcount, gcomm_datatype type)
{
    size_t bytes;
    GCOMMI_CHECK(check_position_call(outbuf, "outbuf", outcount, type, inbuf, "inbuf", insize,
                                     position, 1, &bytes));
    if (bytes == 0) return GCOMM_SUCCESS;
    gcommi_host_copy(gcommi_type_layout(type), (char *)outbuf, 0, bytes,
                     (char *)inbuf + *position, 0);
    *position += bytes;
    return GCOMM_SUCCESS;
}

/* Checks shared by the range calls. */
static int check_range_call(const void *typed, const char *typed_name, size_t count,
                            const char *count_name, gcomm_datatype type, size_t offset,
                            size_t bytes, const void *packed, const char *packed_name)
{
    GCOMMI_CHECK(gcommi_type_check_committed(type, "type"));
    size_t total;
    GCOMMI_CHECK(gcommi_type_bytes(type, count, count_name, &total));
    if (offset > total || bytes > total - offset)
        return GCOMMI_ERROR(GCOMM_ERR_ARG,
                            "range [%zu, %zu + %zu) is beyond the %zu packed bytes of %s = %zu",
                            offset, offset, bytes, total, count_name, count);
    if (bytes == 0) return GCOMM_SUCCESS;
    if (!typed) return GCOMMI_ERROR(GCOMM_ERR_BUFFER, "%s is NULL with %zu bytes", typed_name, bytes);
    if (!packed)
        return GCOMMI_ERROR(GCOMM_ERR_BUFFER, "%s is NULL with %zu bytes", packed_name, bytes);
    return GCOMM_SUCCESS;
}

int gcomm_pack_range(const void *inbuf, size_t incount, gcomm_datatype type, size_t offset,
                     size_t bytes, void *outbuf)
{
    GCOMMI_CHECK(check_range_call(inbuf, "inbuf", incount, "incount", type, offset, bytes,
                                  outbuf, "outbuf"));
    gcommi_host_copy(gcommi_type_layout(type), (char *)inbuf, offset, bytes, outbuf, 1);
    return GCOMM_SUCCESS;
}

int gcomm_unpack_range(const void *inbuf, size_t offset, size_t bytes, void *outbuf,
                       size_t outcount, gcomm_datatype type)
{
    GCOMMI_CHECK(check_range_call(outbuf, "outbuf", outcount, "outcount", type, offset, bytes,
                                  inbuf, "inbuf"));
    gcommi_host_copy(gcommi_type_layout(type), outbuf, offset, bytes, (char *)inbuf, 0);
    return GCOMM_SUCCESS;
}

int gcomm_pack_async(const void *inbuf, size_t incount, gcomm_datatype type, void *outbuf,
                     size_t outsize, size_t *position, void *stream)
{
    /* Host memory: the copy is done when the call returns, whatever the stream. */
    (void)stream;
    return gcomm_pack(inbuf, incount, type, outbuf, outsize, position);
}

int gcomm_unpack_async(const void *inbuf, size_t insize, size_t *position, void *outbuf,
                       size_t outcount, gcomm_datatype type, void *stream)
{
    (void)stream;
    return gcomm_unpack(inbuf, insize, position, outbuf, outcount, type);
}

int gcomm_copy(const void *src, size_t srccount, gcomm_datatype srctype, void *dst,
               size_t dstcount, gcomm_datatype dsttype, void *stream)
{
    (void)stream;
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
    size_t chunk = bytes < GCOMMI_COPY_CHUNK ? bytes : GCOMMI_COPY_CHUNK;
    char *bounce = malloc(chunk);
    if (!bounce) return GCOMMI_ERROR(GCOMM_ERR_NOMEM, "cannot allocate %zu bytes", chunk);
    const gcommi_layout_t *ls = gcommi_type_layout(srctype), *ld = gcommi_type_layout(dsttype);
    for (size_t off = 0; off < bytes; off += chunk) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        gcommi_host_copy(ls, (char *)src, off, n, bounce, 1);
        gcommi_host_copy(ld, dst, off, n, bounce, 0);
    }
    free(bounce);
    return GCOMM_SUCCESS;
}
