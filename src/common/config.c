/* Reads the configuration table from the environment once and prints it on request. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "gcomm/gcomm.h"

extern char **environ;

typedef enum { GCOMMI_CFG_LEVEL, GCOMMI_CFG_INT, GCOMMI_CFG_SIZE, GCOMMI_CFG_STRING } gcommi_cfg_type_t;

typedef struct {
    const char *name; /* without the GCOMM_ prefix, lower case as in the table */
    gcommi_cfg_type_t type;
    const char *def;
    const char *desc;
    size_t offset;
} gcommi_cfg_entry_t;

static const gcommi_cfg_entry_t gcommi_cfg_table[] = {
#define GCOMMI_CONFIG_ENTRY(field, type, def, desc)                                            \
    {#field, GCOMMI_CFG_##type, def, desc, offsetof(gcommi_config_t, field)},
    GCOMMI_CONFIG_VARS(GCOMMI_CONFIG_ENTRY)
#undef GCOMMI_CONFIG_ENTRY
};
#define GCOMMI_CFG_N (sizeof(gcommi_cfg_table) / sizeof(gcommi_cfg_table[0]))

static gcommi_config_t gcommi_cfg;
static FILE *gcommi_log_stream;
static pthread_once_t gcommi_cfg_once = PTHREAD_ONCE_INIT;
/* Warnings found while parsing are printed after parsing, when the log level is known. */
static char gcommi_cfg_warnings[2048];

static const char *const gcommi_level_words[] = {"none", "error", "warn", "info", "debug", "trace"};

static void env_name(const gcommi_cfg_entry_t *e, char *buf, size_t len)
{
    snprintf(buf, len, "GCOMM_%s", e->name);
    for (char *p = buf; *p; p++) *p = (char)toupper((unsigned char)*p);
}

static void warn_later(const char *fmt, const char *a, const char *b)
{
    size_t used = strlen(gcommi_cfg_warnings);
    snprintf(gcommi_cfg_warnings + used, sizeof(gcommi_cfg_warnings) - used, fmt, a, b);
}

static int parse_value(const gcommi_cfg_entry_t *e, const char *value, void *dst)
{
    char *end = NULL;
    switch (e->type) {
    case GCOMMI_CFG_LEVEL:
        for (int i = 0; i < (int)(sizeof(gcommi_level_words) / sizeof(*gcommi_level_words)); i++)
            if (strcasecmp(value, gcommi_level_words[i]) == 0) {
                *(int *)dst = i;
                return 0;
            }
        return -1;
    case GCOMMI_CFG_INT:
        errno = 0;
        *(long *)dst = strtol(value, &end, 0);
        return (errno || end == value || *end) ? -1 : 0;
    case GCOMMI_CFG_SIZE: {
        errno = 0;
        unsigned long long v = strtoull(value, &end, 0);
        if (errno || end == value || value[0] == '-') return -1;
        unsigned long long mult = 1;
        if (*end == 'k' || *end == 'K') mult = 1ull << 10, end++;
        else if (*end == 'm' || *end == 'M') mult = 1ull << 20, end++;
        else if (*end == 'g' || *end == 'G') mult = 1ull << 30, end++;
        if (*end) return -1;
        *(size_t *)dst = (size_t)(v * mult);
        return 0;
    }
    case GCOMMI_CFG_STRING: *(const char **)dst = value; return 0;
    }
    return -1;
}

/* Edit distance, to suggest the variable a misspelt one probably meant. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return (size_t)-1;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = (toupper((unsigned char)a[i - 1]) == toupper((unsigned char)b[j - 1])) ? 0 : 1;
            size_t best = diag + cost;
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static void check_unknown_variables(void)
{
    for (char **env = environ; env && *env; env++) {
        /* GCOMM_TEST_* belong to the test programs, not the library. */
        if (strncmp(*env, "GCOMM_", 6) != 0 || strncmp(*env, "GCOMM_TEST_", 11) == 0) continue;
        char name[128];
        size_t n = strcspn(*env, "=");
        if (n >= sizeof(name)) n = sizeof(name) - 1;
        memcpy(name, *env, n);
        name[n] = '\0';
        const char *closest = NULL;
        size_t best = (size_t)-1;
        int known = 0;
        for (size_t i = 0; i < GCOMMI_CFG_N; i++) {
            char full[128];
            env_name(&gcommi_cfg_table[i], full, sizeof(full));
            if (strcmp(full, name) == 0) known = 1;
            size_t d = edit_distance(full, name);
            if (d < best) best = d, closest = gcommi_cfg_table[i].name;
        }
        if (!known) {
            char suggestion[96] = "";
            if (closest) {
                snprintf(suggestion, sizeof(suggestion), "GCOMM_%s", closest);
                for (char *p = suggestion; *p; p++) *p = (char)toupper((unsigned char)*p);
            }
            warn_later("unknown configuration variable %s (did you mean %s?)\n", name, suggestion);
        }
    }
}

static void config_load(void)
{
    for (size_t i = 0; i < GCOMMI_CFG_N; i++) {
        const gcommi_cfg_entry_t *e = &gcommi_cfg_table[i];
        char name[128];
        env_name(e, name, sizeof(name));
        void *dst = (char *)&gcommi_cfg + e->offset;
        parse_value(e, e->def, dst); /* defaults always parse */
        const char *value = getenv(name);
        if (value && parse_value(e, value, dst) != 0) {
            warn_later("%s=%s cannot be parsed; using the default\n", name, value);
            parse_value(e, e->def, dst);
        }
    }
    gcommi_log_stream = stderr;
    if (gcommi_cfg.log_file && gcommi_cfg.log_file[0]) {
        char path[512];
        const char *p = strstr(gcommi_cfg.log_file, "%p");
        if (p)
            snprintf(path, sizeof(path), "%.*s%d%s", (int)(p - gcommi_cfg.log_file),
                     gcommi_cfg.log_file, (int)getpid(), p + 2);
        else
            snprintf(path, sizeof(path), "%s", gcommi_cfg.log_file);
        FILE *f = fopen(path, "a");
        if (f) gcommi_log_stream = f;
        else warn_later("GCOMM_LOG_FILE=%s cannot be opened (%s); logging to stderr\n", path,
                        strerror(errno));
    }
    check_unknown_variables();
}

const gcommi_config_t *gcommi_config(void)
{
    pthread_once(&gcommi_cfg_once, config_load);
    if (gcommi_cfg_warnings[0]) {
        /* Print the parse warnings once (benign race: at worst printed twice). */
        static char printed;
        if (!printed) {
            printed = 1;
            if (gcommi_cfg.log_level >= GCOMMI_LOG_WARN)
                fprintf(gcommi_log_stream, "gcomm warn config: %s", gcommi_cfg_warnings);
        }
    }
    return &gcommi_cfg;
}

FILE *gcommi_config_log_stream(void)
{
    gcommi_config();
    return gcommi_log_stream;
}

int gcomm_config_print(void *file)
{
    GCOMMI_API_ENTRY();
    FILE *out = file ? (FILE *)file : stdout;
    const gcommi_config_t *cfg = gcommi_config();
    for (size_t i = 0; i < GCOMMI_CFG_N; i++) {
        const gcommi_cfg_entry_t *e = &gcommi_cfg_table[i];
        char name[128];
        env_name(e, name, sizeof(name));
        const void *src = (const char *)cfg + e->offset;
        char value[256];
        switch (e->type) {
        case GCOMMI_CFG_LEVEL: snprintf(value, sizeof(value), "%s", gcommi_level_words[*(const int *)src]); break;
        case GCOMMI_CFG_INT: snprintf(value, sizeof(value), "%ld", *(const long *)src); break;
        case GCOMMI_CFG_SIZE: snprintf(value, sizeof(value), "%zu", *(const size_t *)src); break;
        case GCOMMI_CFG_STRING: snprintf(value, sizeof(value), "%s", *(const char *const *)src); break;
        }
        fprintf(out, "%-24s = %-12s (default \"%s\")\n    %s\n", name, value, e->def, e->desc);
    }
    return GCOMM_SUCCESS;
}
