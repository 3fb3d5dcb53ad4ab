/* Configuration read from GCOMM_* environment variables, once, in one place (config_vars.h). */
#ifndef GCOMM_COMMON_CONFIG_H
#define GCOMM_COMMON_CONFIG_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
#define GCOMMI_CONFIG_FIELD_LEVEL int
#define GCOMMI_CONFIG_FIELD_INT long
#define GCOMMI_CONFIG_FIELD_SIZE size_t
#define GCOMMI_CONFIG_FIELD_STRING const char *
#define GCOMMI_CONFIG_FIELD(field, type, def, desc) GCOMMI_CONFIG_FIELD_##type field;
#include "common/config_vars.h"
    GCOMMI_CONFIG_VARS(GCOMMI_CONFIG_FIELD)
#undef GCOMMI_CONFIG_FIELD
} gcommi_config_t;

/* The configuration, read from the environment on first use (thread-safe). Unknown GCOMM_*
 * variables and unparsable values are reported once with a warning naming the closest variable. */
const gcommi_config_t *gcommi_config(void);

/* Where log messages go (GCOMM_LOG_FILE or stderr). */
FILE *gcommi_config_log_stream(void);

#endif /* GCOMM_COMMON_CONFIG_H */
