/* GCOMM_HD (logic shared by host and device) is defined in the public detail header, because the
 * header-only device API is built from such functions too. */
#ifndef GCOMM_COMMON_HD_H
#define GCOMM_COMMON_HD_H
#include "gcomm/detail/hd.h"
#endif /* GCOMM_COMMON_HD_H */
