/* Status strings and the thread-local error detail. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"

static _Thread_local char gcommi_detail[512];
_Thread_local const char *gcommi_api_name;

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
    /* Name the public function the user called, also when an internal helper found the fault. */
    const char *api = strncmp(func, "gcomm_", 6) == 0 || !gcommi_api_name ? func : gcommi_api_name;
    int n = snprintf(gcommi_detail, sizeof(gcommi_detail), "%s: ", api);
    if (n < 0 || (size_t)n >= sizeof(gcommi_detail)) n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(gcommi_detail + n, sizeof(gcommi_detail) - (size_t)n, fmt, ap);
    va_end(ap);
    gcommi_log(GCOMMI_LOG_DEBUG, "error", file, line, "%s -> %s", gcommi_detail,
               gcomm_error_string(code));
    return code;
}
