/* The committed layout of a datatype (the representation and its traversal are in the public
 * detail header, which device code includes too) and how the library gets at it. */
#ifndef GCOMM_DATATYPE_LAYOUT_H
#define GCOMM_DATATYPE_LAYOUT_H

#include "gcomm/detail/layout.h"

#ifdef __cplusplus
extern "C" {
#endif
struct gcomm_datatype_s;
/* The layout of a committed type (NULL if not committed): what a GPU engine copies to the device. */
const gcommi_layout_t *gcommi_type_get_layout(const struct gcomm_datatype_s *type);
#ifdef __cplusplus
}
#endif

#endif /* GCOMM_DATATYPE_LAYOUT_H */
