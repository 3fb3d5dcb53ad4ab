/* Unit tests of src/common: status strings, the thread-local error detail, the configuration
 * parser (GCOMM_* environment variables) and logging.
 *
 * The configuration is read once per process, so each configuration case runs this program again
 * (re-executed as a child with `--child MODE`) with a crafted environment, and checks what the
 * child printed on stdout and stderr. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "testutil.h"

extern char **environ;

/* ---- status codes --------------------------------------------------------------------------- */

static void test_status_strings(void)
{
    static const struct {
        int code;
        const char *name;
    } codes[] = {
#define STATUS_ENTRY(name, value, desc) {name, #name},
        GCOMM_STATUS_LIST(STATUS_ENTRY)
#undef STATUS_ENTRY
    };
    const size_t n = sizeof(codes) / sizeof(codes[0]);
    TEST_CHECK(GCOMM_SUCCESS == 0, "GCOMM_SUCCESS is %d", GCOMM_SUCCESS);
    for (size_t i = 0; i < n; i++) {
        const char *s = gcomm_error_string(codes[i].code);
        TEST_CHECK(s != NULL && s[0] != '\0', "%s has no string", codes[i].name);
        if (!s) continue;
        TEST_CHECK(strcmp(s, "unknown status") != 0, "%s is unknown to gcomm_error_string",
                   codes[i].name);
        TEST_CHECK(gcomm_error_string(codes[i].code) == s, "%s: string not static", codes[i].name);
        if (i > 0)
            TEST_CHECK(codes[i].code < 0, "%s = %d is not negative", codes[i].name, codes[i].code);
        for (size_t j = 0; j < i; j++) {
            TEST_CHECK(codes[i].code != codes[j].code, "%s and %s share the value %d",
                       codes[i].name, codes[j].name, codes[i].code);
            TEST_CHECK(strcmp(s, gcomm_error_string(codes[j].code)) != 0,
                       "%s and %s share the string \"%s\"", codes[i].name, codes[j].name, s);
        }
    }
    static const int not_codes[] = {1, 77, -12345, -1000000, 2147483647, -2147483647 - 1};
    for (size_t i = 0; i < sizeof(not_codes) / sizeof(not_codes[0]); i++)
        TEST_CHECK(strcmp(gcomm_error_string(not_codes[i]), "unknown status") == 0,
                   "gcomm_error_string(%d) = \"%s\"", not_codes[i],
                   gcomm_error_string(not_codes[i]));
}

/* ---- thread-local error detail -------------------------------------------------------------- */

static pthread_barrier_t detail_barrier;

typedef struct {
    int id;
    char seen_before[64];
    char seen_after[600];
    int rc;
} detail_arg_t;

static void *detail_thread(void *p)
{
    detail_arg_t *arg = p;
    /* Fresh thread: nothing failed here yet. */
    snprintf(arg->seen_before, sizeof(arg->seen_before), "%s", gcomm_last_error_detail());
    pthread_barrier_wait(&detail_barrier);
    /* A public call failing with a value of this thread's own. */
    gcomm_datatype t = GCOMM_DATATYPE_NULL;
    arg->rc = gcomm_type_contiguous(-(1000 + arg->id), GCOMM_INT, &t);
    /* Both threads have failed before either reads its detail. */
    pthread_barrier_wait(&detail_barrier);
    snprintf(arg->seen_after, sizeof(arg->seen_after), "%s", gcomm_last_error_detail());
    return NULL;
}

static void test_error_detail_thread_local(void)
{
    TEST_CHECK(gcomm_last_error_detail() != NULL, "detail is NULL");
    int rc = GCOMMI_ERROR(GCOMM_ERR_ARG, "main thread: x = %d", 7);
    TEST_CHECK(rc == GCOMM_ERR_ARG, "GCOMMI_ERROR returned %d", rc);
    TEST_CHECK(strstr(gcomm_last_error_detail(), "main thread: x = 7") != NULL,
               "main detail: \"%s\"", gcomm_last_error_detail());
    /* A failing public call names itself and the bad value. */
    gcomm_datatype t = GCOMM_DATATYPE_NULL;
    TEST_RC(GCOMM_ERR_COUNT, gcomm_type_vector(-3, 1, 1, GCOMM_INT, &t));
    TEST_CHECK(strstr(gcomm_last_error_detail(), "gcomm_type_vector") != NULL &&
                   strstr(gcomm_last_error_detail(), "-3") != NULL,
               "detail: \"%s\"", gcomm_last_error_detail());
    TEST_CHECK(t == GCOMM_DATATYPE_NULL, "failed call changed *newtype");
    rc = GCOMMI_ERROR(GCOMM_ERR_ARG, "main thread: x = %d", 7);

    detail_arg_t args[2] = {{.id = 0}, {.id = 1}};
    pthread_t threads[2];
    pthread_barrier_init(&detail_barrier, NULL, 2);
    for (int i = 0; i < 2; i++) pthread_create(&threads[i], NULL, detail_thread, &args[i]);
    for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&detail_barrier);
    for (int i = 0; i < 2; i++) {
        char want[64];
        snprintf(want, sizeof(want), "%d", -(1000 + i));
        TEST_CHECK(args[i].seen_before[0] == '\0', "thread %d started with detail \"%s\"", i,
                   args[i].seen_before);
        TEST_CHECK(args[i].rc == GCOMM_ERR_COUNT, "thread %d: rc %d", i, args[i].rc);
        TEST_CHECK(strstr(args[i].seen_after, want) != NULL, "thread %d sees \"%s\", wants \"%s\"",
                   i, args[i].seen_after, want);
        TEST_CHECK(strstr(args[i].seen_after, i == 0 ? "-1001" : "-1000") == NULL,
                   "thread %d sees the other thread's detail: \"%s\"", i, args[i].seen_after);
    }
    /* The threads' failures did not touch the main thread's detail. */
    TEST_CHECK(strstr(gcomm_last_error_detail(), "main thread: x = 7") != NULL,
               "main detail changed to \"%s\"", gcomm_last_error_detail());

    /* A detail longer than the buffer is cut, not overflowed. */
    char longer[2048];
    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    GCOMMI_ERROR(GCOMM_ERR_ARG, "%s", longer);
    size_t len = strlen(gcomm_last_error_detail());
    TEST_CHECK(len > 100 && len < sizeof(longer), "long detail has length %zu", len);
}

/* ---- configuration, in child processes ------------------------------------------------------ */

/* What the child does: load the configuration and print it. */
static int child_main(const char *mode)
{
    const gcommi_config_t *cfg = gcommi_config();
    printf("log_level=%d\n", cfg->log_level);
    printf("log_file=[%s]\n", cfg->log_file ? cfg->log_file : "(null)");
    if (strcmp(mode, "fail") == 0) /* a failing call: logged at debug level with file:line */
        GCOMMI_ERROR(GCOMM_ERR_TAG, "child: tag = %d", -5);
    if (strcmp(mode, "print") == 0) gcomm_config_print(stdout);
    fflush(stdout);
    return 0;
}

typedef struct {
    int status;
    char out[8192];
    char err[8192];
} child_result_t;

static void slurp(FILE *f, char *buf, size_t len)
{
    rewind(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
}

/* Runs this program as `self --child mode` with the parent's environment minus every GCOMM_*
 * variable, plus `vars` (NULL-terminated "NAME=value" strings). */
static void run_child(const char *mode, const char *const vars[], child_result_t *res)
{
    size_t nenv = 0, nvars = 0;
    while (environ[nenv]) nenv++;
    while (vars[nvars]) nvars++;
    char **envp = calloc(nenv + nvars + 1, sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++)
        if (strncmp(environ[i], "GCOMM_", 6) != 0) envp[k++] = environ[i];
    for (size_t i = 0; i < nvars; i++) envp[k++] = (char *)vars[i];
    envp[k] = NULL;

    FILE *out = tmpfile(), *err = tmpfile();
    res->status = -1;
    res->out[0] = res->err[0] = '\0';
    if (!out || !err) {
        TEST_CHECK(0, "tmpfile: %s", strerror(errno));
        goto done;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fileno(out), 1);
        dup2(fileno(err), 2);
        char *argv[] = {"test_common", "--child", (char *)mode, NULL};
        execve("/proc/self/exe", argv, envp);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) {
        TEST_CHECK(0, "fork/waitpid: %s", strerror(errno));
        goto done;
    }
    res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    slurp(out, res->out, sizeof(res->out));
    slurp(err, res->err, sizeof(res->err));
done:
    if (out) fclose(out);
    if (err) fclose(err);
    free(envp);
}

#define CHILD(mode, res, ...)                                                                  \
    do {                                                                                       \
        const char *const vars_[] = {__VA_ARGS__, NULL};                                       \
        run_child((mode), vars_, (res));                                                       \
        TEST_CHECK((res)->status == 0, "child exited %d; stderr: %s", (res)->status,           \
                   (res)->err);                                                                \
    } while (0)

static int child_level(const child_result_t *r)
{
    const char *p = strstr(r->out, "log_level=");
    return p ? atoi(p + strlen("log_level=")) : -1;
}

static void test_config_log_level(void)
{
    child_result_t *r = malloc(sizeof(*r));
    /* No GCOMM_ variable at all: defaults, nothing on stderr. */
    CHILD("plain", r, "UNRELATED_VARIABLE=1");
    TEST_CHECK(child_level(r) == GCOMMI_LOG_WARN, "default level %d", child_level(r));
    TEST_CHECK(strstr(r->out, "log_file=[]") != NULL, "default log file: %s", r->out);
    TEST_CHECK(r->err[0] == '\0', "defaults printed: %s", r->err);

    static const struct {
        const char *var;
        int level;
    } levels[] = {
        {"GCOMM_LOG_LEVEL=none", GCOMMI_LOG_NONE},   {"GCOMM_LOG_LEVEL=error", GCOMMI_LOG_ERROR},
        {"GCOMM_LOG_LEVEL=warn", GCOMMI_LOG_WARN},   {"GCOMM_LOG_LEVEL=info", GCOMMI_LOG_INFO},
        {"GCOMM_LOG_LEVEL=debug", GCOMMI_LOG_DEBUG}, {"GCOMM_LOG_LEVEL=trace", GCOMMI_LOG_TRACE},
        {"GCOMM_LOG_LEVEL=DEBUG", GCOMMI_LOG_DEBUG}, {"GCOMM_LOG_LEVEL=Info", GCOMMI_LOG_INFO},
    };
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
        CHILD("plain", r, levels[i].var);
        TEST_CHECK(child_level(r) == levels[i].level, "%s gave level %d, expected %d",
                   levels[i].var, child_level(r), levels[i].level);
        TEST_CHECK(r->err[0] == '\0', "%s printed: %s", levels[i].var, r->err);
    }

    /* Values that do not parse: a warning naming the variable and the value, the default kept. */
    static const char *const bad[] = {"GCOMM_LOG_LEVEL=loud", "GCOMM_LOG_LEVEL=verbose"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHILD("plain", r, bad[i]);
        TEST_CHECK(child_level(r) == GCOMMI_LOG_WARN, "%s gave level %d", bad[i], child_level(r));
        TEST_CHECK(strstr(r->err, bad[i]) != NULL && strstr(r->err, "warn") != NULL,
                   "%s: the warning does not name it: \"%s\"", bad[i], r->err);
    }
    free(r);
}

static void test_config_unknown_variable(void)
{
    child_result_t *r = malloc(sizeof(*r));
    static const struct {
        const char *var, *name, *closest;
    } cases[] = {
        {"GCOMM_LOG_LEVLE=debug", "GCOMM_LOG_LEVLE", "GCOMM_LOG_LEVEL"},
        {"GCOMM_LOGLEVEL=info", "GCOMM_LOGLEVEL", "GCOMM_LOG_LEVEL"},
        {"GCOMM_LOG_FLIE=/tmp/x", "GCOMM_LOG_FLIE", "GCOMM_LOG_FILE"},
        {"GCOMM_log_file=/tmp/x", "GCOMM_log_file", "GCOMM_LOG_FILE"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CHILD("plain", r, cases[i].var);
        TEST_CHECK(child_level(r) == GCOMMI_LOG_WARN, "%s changed the level to %d", cases[i].var,
                   child_level(r));
        TEST_CHECK(strstr(r->err, cases[i].name) != NULL, "%s: no warning naming it: \"%s\"",
                   cases[i].var, r->err);
        char want[96];
        snprintf(want, sizeof(want), "did you mean %s", cases[i].closest);
        TEST_CHECK(strstr(r->err, want) != NULL, "%s: no \"%s\" in \"%s\"", cases[i].var, want,
                   r->err);
    }
    /* Two unknown variables: both reported. */
    CHILD("plain", r, "GCOMM_LOG_LEVLE=debug", "GCOMM_TIMEOUT_MSS=5");
    TEST_CHECK(strstr(r->err, "GCOMM_LOG_LEVLE") && strstr(r->err, "GCOMM_TIMEOUT_MSS"),
               "not both reported: \"%s\"", r->err);
    /* A known variable is not reported as unknown. */
    CHILD("plain", r, "GCOMM_LOG_LEVEL=info", "GCOMM_LOG_FILE=");
    TEST_CHECK(strstr(r->err, "unknown") == NULL, "known variables reported: \"%s\"", r->err);
    /* At level none the warning is not printed. */
    CHILD("plain", r, "GCOMM_LOG_LEVEL=none", "GCOMM_LOG_LEVLE=debug");
    TEST_CHECK(r->err[0] == '\0', "printed at level none: \"%s\"", r->err);
    /* Not a GCOMM_ variable (the prefix is case-sensitive): not our business. */
    CHILD("plain", r, "gcomm_whatever=1", "GCOMMX=1");
    TEST_CHECK(r->err[0] == '\0', "non-GCOMM_ variables reported: \"%s\"", r->err);
    free(r);
}

static void test_config_print_and_logging(void)
{
    child_result_t *r = malloc(sizeof(*r));
    /* gcomm_config_print lists every variable with its current value and default. */
    CHILD("print", r, "GCOMM_LOG_LEVEL=info");
#define CHECK_LISTED(field, type, def, desc)                                                   \
    do {                                                                                       \
        char name_[64];                                                                        \
        snprintf(name_, sizeof(name_), "GCOMM_%s", #field);                                    \
        for (char *p_ = name_; *p_; p_++)                                                      \
            if (*p_ >= 'a' && *p_ <= 'z') *p_ = (char)(*p_ - 'a' + 'A');                       \
        TEST_CHECK(strstr(r->out, name_) != NULL, "%s not printed: %s", name_, r->out);        \
        char def_[128];                                                                        \
        snprintf(def_, sizeof(def_), "(default \"%s\")", def);                                 \
        TEST_CHECK(strstr(r->out, def_) != NULL, "%s: no %s in: %s", name_, def_, r->out);     \
    } while (0);
    GCOMMI_CONFIG_VARS(CHECK_LISTED)
#undef CHECK_LISTED
    TEST_CHECK(strstr(r->out, "= info") != NULL, "current value not printed: %s", r->out);

    /* At debug level a failing call is logged with its detail and file:line; at warn it is not. */
    CHILD("fail", r, "GCOMM_LOG_LEVEL=debug");
    TEST_CHECK(strstr(r->err, "child: tag = -5") != NULL, "failure not logged: \"%s\"", r->err);
    TEST_CHECK(strstr(r->err, "test_common.c:") != NULL, "no file:line: \"%s\"", r->err);
    TEST_CHECK(strstr(r->err, "debug") != NULL, "no level: \"%s\"", r->err);
    CHILD("fail", r, "GCOMM_LOG_LEVEL=warn");
    TEST_CHECK(r->err[0] == '\0', "logged at warn: \"%s\"", r->err);

    /* GCOMM_LOG_FILE: messages are appended there, %p becomes the process id. */
    char dir[] = "/tmp/gcomm_test_common.XXXXXX";
    if (mkdtemp(dir)) {
        char var[128], path_pattern[128];
        snprintf(var, sizeof(var), "GCOMM_LOG_FILE=%s/log.%%p", dir);
        snprintf(path_pattern, sizeof(path_pattern), "%s/log.", dir);
        CHILD("fail", r, "GCOMM_LOG_LEVEL=debug", var);
        TEST_CHECK(strstr(r->err, "child: tag = -5") == NULL, "logged to stderr: \"%s\"", r->err);
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "cat %s/log.* 2>/dev/null; rm -rf %s", dir, dir);
        FILE *p = popen(cmd, "r");
        char log[4096] = "";
        if (p) {
            size_t n = fread(log, 1, sizeof(log) - 1, p);
            log[n] = '\0';
            pclose(p);
        }
        TEST_CHECK(strstr(log, "child: tag = -5") != NULL, "not in the log file: \"%s\"", log);
    }
    /* A log file that cannot be opened: a warning, and logging goes to stderr. */
    CHILD("fail", r, "GCOMM_LOG_LEVEL=debug", "GCOMM_LOG_FILE=/nonexistent-dir/gcomm.log");
    TEST_CHECK(strstr(r->err, "/nonexistent-dir/gcomm.log") != NULL, "no warning: \"%s\"", r->err);
    TEST_CHECK(strstr(r->err, "child: tag = -5") != NULL, "not logged to stderr: \"%s\"", r->err);
    free(r);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child") == 0) return child_main(argv[2]);
    test_status_strings();
    test_config_log_level();
    test_config_unknown_variable();
    test_config_print_and_logging();
    test_error_detail_thread_local();
    return gcommt_finish("test_common");
}
