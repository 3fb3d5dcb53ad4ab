/* Levelled logging to stderr (or GCOMM_LOG_FILE). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"

static const char *const gcommi_level_names[] = {"none", "error", "warn", "info", "debug",
                                                 "trace"};

gcommi_log_level_t gcommi_log_level(void) { return (gcommi_log_level_t)gcommi_config()->log_level; }

void gcommi_log(gcommi_log_level_t level, const char *subsys, const char *file, int line,
                const char *fmt, ...)
{
    if (level > gcommi_log_level()) return;
    FILE *out = gcommi_config_log_stream();
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    const char *base = strrchr(file, '/');
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* One fprintf per message so that lines of several threads do not interleave. */
    fprintf(out, "gcomm[%s:%d] %s %s %s:%d %s\n", host, (int)getpid(), gcommi_level_names[level],
            subsys, base ? base + 1 : file, line, msg);
    fflush(out);
}
