/* gcomm_log on the host: see devlog.h. */
#include <string.h>

#include "rma/devlog.h"

/* Appends to out[*len .. size) (always NUL-terminated, silently truncated). */
static void put(char *out, size_t size, size_t *len, const char *s, size_t n)
{
    if (*len + 1 >= size) return;
    size_t room = size - 1 - *len;
    if (n > room) n = room;
    memcpy(out + *len, s, n);
    *len += n;
    out[*len] = '\0';
}

size_t gcommi_devlog_format(const char *fmt, const uint64_t *args, int nargs, char *out,
                            size_t outsize)
{
    size_t len = 0;
    int next = 0;
    if (outsize == 0) return 0;
    out[0] = '\0';
    for (const char *p = fmt; *p;) {
        if (*p != '%') {
            const char *q = strchr(p, '%');
            size_t n = q ? (size_t)(q - p) : strlen(p);
            put(out, outsize, &len, p, n);
            p += n;
            continue;
        }
        if (p[1] == '%') {
            put(out, outsize, &len, "%", 1);
            p += 2;
            continue;
        }
        /* %[flags][width][.precision][length]conversion; '*' takes an argument */
        char spec[64];
        size_t sl = 0;
        int star[2], nstar = 0;
        spec[sl++] = *p++;
        while (*p && strchr("-+ #0", *p) && sl < 40) spec[sl++] = *p++;
        if (*p == '*') {
            star[nstar++] = next < nargs ? (int)(int64_t)args[next++] : 0;
            spec[sl++] = *p++;
        } else {
            while (*p >= '0' && *p <= '9' && sl < 40) spec[sl++] = *p++;
        }
        if (*p == '.') {
            spec[sl++] = *p++;
            if (*p == '*') {
                star[nstar++] = next < nargs ? (int)(int64_t)args[next++] : 0;
                spec[sl++] = *p++;
            } else {
                while (*p >= '0' && *p <= '9' && sl < 40) spec[sl++] = *p++;
            }
        }
        while (*p && strchr("hlLqjzt", *p)) p++; /* the device widened everything to 64 bits */
        char conv = *p ? *p++ : '\0';
        char piece[512];
        int have = next < nargs;
        uint64_t w = have ? args[next] : 0;
        if (strchr("diouxXcfFeEgGaAps", conv) == NULL || conv == '\0') {
            put(out, outsize, &len, "<?>", 3);
            continue;
        }
        next++;
        if (!have) {
            put(out, outsize, &len, "<?>", 3);
            continue;
        }
        if (strchr("di", conv)) {
            spec[sl++] = 'l', spec[sl++] = 'l';
        } else if (strchr("ouxX", conv)) {
            spec[sl++] = 'l', spec[sl++] = 'l';
        }
        spec[sl++] = conv == 's' ? 's' : conv;
        spec[sl] = '\0';
        int n;
        double d;
        memcpy(&d, &w, sizeof(d));
#define GCOMMI_PRINT(value)                                                                    \
    (nstar == 2   ? snprintf(piece, sizeof(piece), spec, star[0], star[1], value)             \
     : nstar == 1 ? snprintf(piece, sizeof(piece), spec, star[0], value)                      \
                  : snprintf(piece, sizeof(piece), spec, value))
        if (strchr("di", conv)) n = GCOMMI_PRINT((long long)w);
        else if (strchr("ouxX", conv)) n = GCOMMI_PRINT((unsigned long long)w);
        else if (conv == 'c') n = GCOMMI_PRINT((int)w);
        else if (conv == 'p') n = GCOMMI_PRINT((void *)(uintptr_t)w);
        else if (conv == 's') n = GCOMMI_PRINT("<string>");
        else n = GCOMMI_PRINT(d);
#undef GCOMMI_PRINT
        if (n > 0) put(out, outsize, &len, piece, (size_t)n < sizeof(piece) ? (size_t)n : sizeof(piece) - 1);
    }
    return len;
}

void gcommi_devlog_print(FILE *f, const gcommi_log_rec_t *recs, uint32_t claimed, int gpu)
{
    uint32_t kept = claimed < GCOMMI_LOG_RECORDS ? claimed : GCOMMI_LOG_RECORDS;
    char line[1024];
    for (uint32_t i = 0; i < kept; i++) {
        const gcommi_log_rec_t *r = &recs[i];
        if (!r->valid) continue;
        char fmt[GCOMMI_LOG_FMT];
        memcpy(fmt, r->fmt, sizeof(fmt));
        fmt[sizeof(fmt) - 1] = '\0';
        size_t n = gcommi_devlog_format(fmt, r->args, r->nargs, line, sizeof(line));
        fprintf(f, "gcomm[rank %d gpu %d] %s%s", r->rank, gpu, line,
                n && line[n - 1] == '\n' ? "" : "\n");
    }
    if (claimed > kept)
        fprintf(f, "gcomm[gpu %d] %u more gcomm_log records were dropped (at most %d per GPU and "
                "launch)\n", gpu, claimed - kept, GCOMMI_LOG_RECORDS);
    fflush(f);
}
