/* gcomm_type_device: a committed type as kernels see it (the typed put/get of the device API). The
 * layout's device copy comes from the GPU engine's per-device cache (gpu_plan.c), so a type is
 * uploaded once per GPU whether it is packed by the host API or moved by device code; host ranks
 * get the committed layout itself. */
#include <string.h>

#include "common/error.h"
#include "datatype/gpu.h"
#include "datatype/type.h"

int gcomm_type_device(gcomm_datatype type, int device, gcomm_device_type_t *out)
{
    GCOMMI_CHECK(gcommi_type_check_committed(type, "type"));
    if (out == NULL) return GCOMMI_ERROR(GCOMM_ERR_ARG, "out is NULL");
    if ((device < 0 && device != GCOMM_DEVICE_HOST) || device >= GCOMMI_TYPE_MAX_DEVICES)
        return GCOMMI_ERROR(GCOMM_ERR_ARG, "device = %d (0 .. %d, or GCOMM_DEVICE_HOST)", device,
                            GCOMMI_TYPE_MAX_DEVICES - 1);
    gcomm_device_type_t h;
    memset(&h, 0, sizeof(h));
    const gcommi_layout_t *L = gcommi_type_layout(type);
    if (device == GCOMM_DEVICE_HOST) { /* host ranks read the committed layout itself */
        h.nodes = L->nodes;
        h.aux = L->aux;
        h.align = gcommi_pow2_align(gcommi_layout_gcd(L));
    } else {
        GCOMMI_CHECK(gcommi_gpu_type_view(type, device, &h.nodes, &h.aux, &h.align));
    }
    h.size = L->size;
    h.extent = L->extent;
    h.true_lb = type->bounds.true_lb;
    h.true_ub = type->bounds.true_ub;
    if (h.size == 0) h.true_lb = h.true_ub = 0; /* touches nothing */
    *out = h;
    return GCOMM_SUCCESS;
}
