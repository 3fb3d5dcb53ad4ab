/* gcomm host C API: everything a host program needs. Device code includes gcomm/device.cuh. */
#ifndef GCOMM_H
#define GCOMM_H

#include "gcomm/status.h"
#include "gcomm/datatype.h"

#define GCOMM_VERSION_MAJOR 0
#define GCOMM_VERSION_MINOR 1
#define GCOMM_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* Prints every GCOMM_* configuration variable with its current value, default and description
 * to the given FILE* (passed as void* so this header needs no <stdio.h>). */
int gcomm_config_print(void *file);

#ifdef __cplusplus
}
#endif

#endif /* GCOMM_H */
