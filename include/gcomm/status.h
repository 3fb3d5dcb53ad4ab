/* gcomm status codes: one status type for the whole library.
 *
 * Every public function returns GCOMM_SUCCESS (0) or one of the negative GCOMM_ERR_* codes below.
 * gcomm_error_string() names a code; gcomm_last_error_detail() says what exactly was wrong in the
 * last failing call of the calling thread (which argument, which value). */
#ifndef GCOMM_STATUS_H
#define GCOMM_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* X-macro: name, value, description. Grouped by kind: arguments, resources, runtime. */
#define GCOMM_STATUS_LIST(X)                                                                 \
    X(GCOMM_SUCCESS, 0, "success")                                                           \
    X(GCOMM_ERR_ARG, -1, "invalid argument")                                                 \
    X(GCOMM_ERR_COUNT, -2, "invalid count (negative)")                                       \
    X(GCOMM_ERR_OVERFLOW, -3, "size or extent overflows 63 bits")                            \
    X(GCOMM_ERR_TYPE, -4, "invalid datatype (null, freed or not a datatype)")                \
    X(GCOMM_ERR_NOT_COMMITTED, -5, "datatype not committed")                                 \
    X(GCOMM_ERR_TRUNCATE, -6, "buffer too small (message truncated)")                        \
    X(GCOMM_ERR_TYPE_MISMATCH, -7, "type signatures do not match")                           \
    X(GCOMM_ERR_BUFFER, -8, "invalid buffer (null with nonzero count)")                      \
    X(GCOMM_ERR_RANK, -9, "rank out of range")                                               \
    X(GCOMM_ERR_TAG, -10, "tag out of range")                                                \
    X(GCOMM_ERR_WINDOW, -11, "access outside a window")                                      \
    X(GCOMM_ERR_NOMEM, -20, "out of memory")                                                 \
    X(GCOMM_ERR_NO_DEVICE, -21, "no usable GPU")                                             \
    X(GCOMM_ERR_CUDA, -22, "CUDA error")                                                     \
    X(GCOMM_ERR_MPI, -23, "MPI error")                                                       \
    X(GCOMM_ERR_UNSUPPORTED, -24, "operation not supported")                                 \
    X(GCOMM_ERR_TIMEOUT, -30, "timed out")                                                   \
    X(GCOMM_ERR_INTERNAL, -31, "internal error")

enum {
#define GCOMM_STATUS_ENUM(name, value, desc) name = value,
    GCOMM_STATUS_LIST(GCOMM_STATUS_ENUM)
#undef GCOMM_STATUS_ENUM
};

/* A static string naming the code ("unknown status" for a value that is not a code). */
const char *gcomm_error_string(int code);

/* What the last failing gcomm call of this thread found wrong, e.g.
 * "gcomm_type_vector: count = -3 is negative". Empty string when nothing failed yet.
 * The string lives in thread-local storage and stays valid until the thread's next failing call. */
const char *gcomm_last_error_detail(void);

#ifdef __cplusplus
}
#endif

#endif /* GCOMM_STATUS_H */
