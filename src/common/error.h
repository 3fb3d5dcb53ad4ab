/* Internal error reporting: every failure is recorded where it is first detected, with a detail
 * string that names the argument and its value, and returned as a GCOMM_ERR_* code. */
#ifndef GCOMM_COMMON_ERROR_H
#define GCOMM_COMMON_ERROR_H

#include "gcomm/status.h"

/* The public function the calling thread is in, set on entry by every public function so that a
 * detail recorded by an internal helper still names the function the user called. The dynamic TLS
 * model, reached through TLS descriptors where the compiler has them (src/CMakeLists.txt: the
 * default's call to __tls_get_addr at every entry took 3% of a 1 KiB pack's time on Zen 4), not
 * initial-exec: the static TLS block has no room for it once the CUDA runtime is loaded with the
 * library through dlopen ("cannot allocate memory in static TLS block", bench_pack_ab in the CUDA
 * build, 2026-11-30). */
extern _Thread_local const char *gcommi_api_name;
#define GCOMMI_API_ENTRY() (gcommi_api_name = __func__)

/* Records the detail for gcomm_last_error_detail(), logs it at debug level with file:line, and
 * returns code, so callers write `return GCOMMI_ERROR(GCOMM_ERR_ARG, "count = %d", count);`. */
int gcommi_error_set(int code, const char *file, int line, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define GCOMMI_ERROR(code, ...) gcommi_error_set((code), __FILE__, __LINE__, __func__, __VA_ARGS__)

/* Propagates a failing status from a callee whose detail is already recorded. */
#define GCOMMI_CHECK(expr)                                                                     \
    do {                                                                                       \
        int gcommi_rc_ = (expr);                                                               \
        if (gcommi_rc_ != GCOMM_SUCCESS) return gcommi_rc_;                                    \
    } while (0)

#endif /* GCOMM_COMMON_ERROR_H */
