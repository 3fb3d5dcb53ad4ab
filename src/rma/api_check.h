/* Argument checks shared by the CUDA runtime and the build without CUDA (api_check.c). Each
 * returns GCOMM_SUCCESS or the error with its detail recorded. */
#ifndef GCOMM_RMA_API_CHECK_H
#define GCOMM_RMA_API_CHECK_H

#include <stddef.h>

#include "gcomm/gcomm.h"

int gcommi_check_launch(const gcomm_launch_t *launch);
int gcommi_check_malloc(size_t bytes, void **ptr);
int gcommi_check_register(const void *ptr, size_t bytes);

#endif /* GCOMM_RMA_API_CHECK_H */
