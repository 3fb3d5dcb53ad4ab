/* The GPU engine in a build without CUDA: every entry point reports that no GPU is usable. */
#include "common/error.h"
#include "datatype/gpu.h"

static int no_gpu(void)
{
    return GCOMMI_ERROR(GCOMM_ERR_NO_DEVICE, "gcomm was built without CUDA");
}

int gcommi_gpu_copy(gcomm_datatype type, int device, char *typed, size_t offset, size_t bytes,
                    char *packed, int pack, void *stream, int max_blocks)
{
    return no_gpu();
}

int gcommi_gpu_relayout(gcomm_datatype srctype, const char *src, gcomm_datatype dsttype,
                        char *dst, size_t bytes, int device, void *stream)
{
    return no_gpu();
}

void gcommi_gpu_type_release(gcomm_datatype type) { (void)type; }

int gcommi_gpu_type_view(gcomm_datatype type, int device, const void **nodes, const int64_t **aux,
                         int64_t *align)
{
    return no_gpu();
}

int gcommi_gpu_alloc(int device, size_t bytes, void *stream, void **ptr) { return no_gpu(); }
int gcommi_gpu_free(int device, void *ptr, void *stream) { return no_gpu(); }
int gcommi_gpu_memcpy_sync(int device, void *dst, const void *src, size_t bytes, int dir,
                           void *stream)
{
    return no_gpu();
}
int gcommi_gpu_sync(int device, void *stream) { return no_gpu(); }
int gcommi_gpu_enable_peer(int device, int peer) { return no_gpu(); }
