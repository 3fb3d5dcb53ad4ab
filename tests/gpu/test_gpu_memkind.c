/* Where gcomm thinks a pointer points, on a machine with a GPU: gcommi_memkind for each kind of
 * allocation, and gcommi_memkind_known_host, which lets a pack between two heap buffers skip the
 * CUDA queries (170-210 ns each on an H200 host). The shortcut must say "host" only for the
 * process's brk heap and never for memory the CUDA driver maps; packs through each pair of kinds
 * must still move the right bytes. Skipped (77) without a usable GPU. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/memkind.h"
#include "gcomm/gcomm.h"
#include "gpu_testutil.h"
#include "testutil.h"

#define N 512 /* doubles of the typed buffer: a vector of 128 blocks of 2, 4 apart packs 256 */

static void check_kind(const char *what, const void *p, gcommi_memkind_t want_kind, int want_known)
{
    int dev = -7;
    gcommi_memkind_t k = gcommi_memkind(p, &dev);
    TEST_CHECK(k == want_kind, "%s: gcommi_memkind %d, expected %d", what, (int)k, (int)want_kind);
    TEST_CHECK((k == GCOMMI_MEM_DEVICE || k == GCOMMI_MEM_MANAGED) ? dev == 0 : dev == -1,
               "%s: device %d for kind %d", what, dev, (int)k);
    int known = gcommi_memkind_known_host(p);
    TEST_CHECK(known == want_known, "%s: gcommi_memkind_known_host %d, expected %d", what, known,
               want_known);
}

/* Packs the vector from typed (host or device, kind tk) into packed and compares with the
 * reference taken from the host copy `ref` of the typed data. */
static void pack_check(const char *what, gcomm_datatype v, const double *ref, double *typed,
                       int typed_dev, double *packed, int packed_dev)
{
    double want[N / 2], got[N / 2];
    for (int b = 0; b < N / 4; b++) {
        want[2 * b] = ref[4 * b];
        want[2 * b + 1] = ref[4 * b + 1];
    }
    if (typed_dev) CUDA_OK(cudaMemcpy(typed, ref, sizeof(double) * N, cudaMemcpyHostToDevice));
    else memcpy(typed, ref, sizeof(double) * N);
    if (packed_dev) CUDA_OK(cudaMemset(packed, 0xA5, sizeof want));
    else memset(packed, 0xA5, sizeof want);
    size_t pos = 0;
    TEST_OK(gcomm_pack(typed, 1, v, packed, sizeof want, &pos));
    TEST_CHECK(pos == sizeof want, "%s: position %zu, expected %zu", what, pos, sizeof want);
    if (packed_dev) CUDA_OK(cudaMemcpy(got, packed, sizeof got, cudaMemcpyDeviceToHost));
    else memcpy(got, packed, sizeof got);
    TEST_CHECK(memcmp(got, want, sizeof want) == 0, "%s: packed bytes differ from the reference",
               what);
}

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        printf("test_gpu_memkind: no usable GPU, skipped\n");
        return GCOMM_TEST_SKIP;
    }
    TEST_CHECK(gcommi_gpu_count() >= 1, "gcommi_gpu_count %d with %d GPUs", gcommi_gpu_count(), n);

    double *heap = malloc(sizeof(double) * N), *heap_packed = malloc(sizeof(double) * N);
    double *reg = malloc(sizeof(double) * N); /* registered below */
    double *dev = NULL, *pinned = NULL, *managed = NULL;
    CUDA_OK(cudaMalloc((void **)&dev, sizeof(double) * N));
    CUDA_OK(cudaMallocHost((void **)&pinned, sizeof(double) * N));
    CUDA_OK(cudaMallocManaged((void **)&managed, sizeof(double) * N, cudaMemAttachGlobal));
    const size_t map_bytes = 1 << 20;
    double *mapped =
        mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    TEST_CHECK(heap && heap_packed && reg && mapped != MAP_FAILED, "allocations");
    if (!heap || !heap_packed || !reg || mapped == MAP_FAILED)
        return gcommt_finish("test_gpu_memkind");
    CUDA_OK(cudaHostRegister(reg, sizeof(double) * N, cudaHostRegisterDefault));

    check_kind("malloc (the brk heap)", heap, GCOMMI_MEM_HOST, 1);
    check_kind("cudaMalloc", dev, GCOMMI_MEM_DEVICE, 0);
    check_kind("cudaMallocHost", pinned, GCOMMI_MEM_HOST_PINNED, 0);
    check_kind("cudaMallocManaged", managed, GCOMMI_MEM_MANAGED, 0);
    check_kind("mmap", mapped, GCOMMI_MEM_HOST, 0);
    /* Registered heap memory: pinned to CUDA, host to the shortcut (which only chooses the CPU
     * path when both sides are host memory). */
    check_kind("malloc + cudaHostRegister", reg, GCOMMI_MEM_HOST_PINNED, 1);
    check_kind("NULL", NULL, GCOMMI_MEM_HOST, 0);

    gcomm_datatype v;
    TEST_OK(gcomm_type_vector(N / 4, 2, 4, GCOMM_DOUBLE, &v));
    TEST_OK(gcomm_type_commit(&v));
    double ref[N];
    uint64_t rng = gcommt_seed(17);
    gcommt_fill_random(ref, sizeof ref, &rng);
    pack_check("heap -> heap", v, ref, heap, 0, heap_packed, 0);
    pack_check("device -> heap", v, ref, dev, 1, heap_packed, 0);
    pack_check("heap -> device", v, ref, heap, 0, dev + N / 2, 1);
    pack_check("device -> registered heap", v, ref, dev, 1, reg, 0);
    pack_check("heap -> pinned", v, ref, heap, 0, pinned, 0);
    pack_check("mmap -> heap", v, ref, mapped, 0, heap_packed, 0);
    pack_check("device -> mmap", v, ref, dev, 1, mapped + N, 0);
    pack_check("heap -> mmap", v, ref, heap, 0, mapped + N, 0);
    pack_check("managed -> heap", v, ref, managed, 0, heap_packed, 0);
    TEST_OK(gcomm_type_free(&v));

    CUDA_OK(cudaHostUnregister(reg));
    CUDA_OK(cudaFree(dev));
    CUDA_OK(cudaFreeHost(pinned));
    CUDA_OK(cudaFree(managed));
    munmap(mapped, map_bytes);
    free(reg);
    free(heap_packed);
    free(heap);
    return gcommt_finish("test_gpu_memkind");
}
