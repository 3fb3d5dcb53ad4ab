/* The predefined types: static, committed objects usable from program start (no init call). */
#include "datatype/type.h"

/* One RUN node per basic type, the committed layout of that type. */
#define GCOMMI_BASIC_NODE(name, sz, al)                                                        \
    static gcommi_dl_t gcommi_node_##name = {.kind = GCOMMI_DL_RUN, .child = -1, .count = 1,   \
                                             .size = (sz), .child_size = (sz), .unit = (sz)};  \
    static gcommi_layout_t gcommi_layout_##name = {.version = GCOMMI_LAYOUT_VERSION,           \
                                                   .nnodes = 1, .depth = 1, .size = (sz),      \
                                                   .extent = (sz), .nruns = 1,                 \
                                                   .nodes = &gcommi_node_##name};
GCOMM_BASIC_TYPE_LIST(GCOMMI_BASIC_NODE)
#undef GCOMMI_BASIC_NODE

/* Fixed size of every exported predefined object (see datatype.h): room for the datatype to
 * grow without changing the symbols' sizes. */
#define GCOMMI_PREDEFINED_SIZE 1024
struct gcommi_predefined_type_s {
    struct gcomm_datatype_s dt;
    char pad[GCOMMI_PREDEFINED_SIZE - sizeof(struct gcomm_datatype_s)];
};
_Static_assert(sizeof(struct gcommi_predefined_type_s) == GCOMMI_PREDEFINED_SIZE,
               "a predefined datatype outgrew its fixed size");

#define GCOMMI_BASIC_OBJECT(name, sz, al)                                                      \
    struct gcommi_predefined_type_s gcommi_type_##name = {.dt = {                              \
        .magic = GCOMMI_TYPE_MAGIC,                                                            \
        .refcount = 1,                                                                         \
        .predefined = 1,                                                                       \
        .committed = 1,                                                                        \
        .combiner = GCOMMI_COMBINER_NAMED,                                                     \
        .basic_id = GCOMM_TYPEID_##name,                                                       \
        .bounds = {.size = (sz), .lb = 0, .ub = (sz), .true_lb = 0, .true_ub = (sz),           \
                   .align = (al), .touched = 1},                                               \
        .nelems = 1,                                                                           \
        .homog_id = GCOMM_TYPEID_##name,                                                       \
        .layout = &gcommi_layout_##name,                                                       \
    }};
GCOMM_BASIC_TYPE_LIST(GCOMMI_BASIC_OBJECT)
#undef GCOMMI_BASIC_OBJECT
