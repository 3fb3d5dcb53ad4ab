/* Status strings and the thread-local error detail. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"

static _Thread_local char gcommi_detail[512];

const char *gcomm_error_string(int code)
{
    switch (code) {
#define GCOMM_STATUS_CASE(name, value, desc)                                                   \
    case name: return desc;
        GCOMM_STATUS_LIST(GCOMM_STATUS_CASE)
#undef GCOMM_STATUS_CASE
    default: return "unknown status";
    }
}

const char *gcomm_last_error_detail(void) { return gcommi_detail; }

int gcommi_error_set(int code, const char *file, int line, const char *func, const char *fmt, ...)
{
    /* Public functions name themselves; internal helpers put the caller's name in the message. */
    int n = 0;
    if (strncmp(func, "gcomm_", 6) == 0) {
        n = snprintf(gcommi_detail, sizeof(gcommi_detail), "%s: ", func);
        if (n < 0 || (size_t)n >= sizeof(gcommi_detail)) n = 0;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(gcommi_detail + n, sizeof(gcommi_detail) - (size_t)n, fmt, ap);
    va_end(ap);
    gcommi_log(GCOMMI_LOG_DEBUG, "error", file, line, "%s -> %s", gcommi_detail,
               gcomm_error_string(code));
    return code;
}
