/* Pointer kinds in a build without CUDA: all memory is host memory. */
#include "common/memkind.h"

int gcommi_gpu_count(void) { return 0; }

gcommi_memkind_t gcommi_memkind(const void *p, int *device)
{
    (void)p;
    *device = -1;
    return GCOMMI_MEM_HOST;
}

int gcommi_memkind_known_host(const void *p)
{
    (void)p;
    return 1;
}
