/* Levelled logging. GCOMM_LOG_LEVEL selects what is printed (error, warn, info, debug, trace);
 * messages carry the host, pid and subsystem. Trace messages compile out of release builds. */
#ifndef GCOMM_COMMON_LOG_H
#define GCOMM_COMMON_LOG_H

typedef enum {
    GCOMMI_LOG_NONE = 0,
    GCOMMI_LOG_ERROR,
    GCOMMI_LOG_WARN,
    GCOMMI_LOG_INFO,
    GCOMMI_LOG_DEBUG,
    GCOMMI_LOG_TRACE
} gcommi_log_level_t;

/* Current level (reads the configuration once). */
gcommi_log_level_t gcommi_log_level(void);

void gcommi_log(gcommi_log_level_t level, const char *subsys, const char *file, int line,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define GCOMM_LOG(level, subsys, ...)                                                          \
    do {                                                                                       \
        if ((level) <= gcommi_log_level())                                                     \
            gcommi_log((level), (subsys), __FILE__, __LINE__, __VA_ARGS__);                    \
    } while (0)

#define GCOMM_LOG_ERROR(subsys, ...) GCOMM_LOG(GCOMMI_LOG_ERROR, subsys, __VA_ARGS__)
#define GCOMM_LOG_WARN(subsys, ...) GCOMM_LOG(GCOMMI_LOG_WARN, subsys, __VA_ARGS__)
#define GCOMM_LOG_INFO(subsys, ...) GCOMM_LOG(GCOMMI_LOG_INFO, subsys, __VA_ARGS__)
#define GCOMM_LOG_DEBUG(subsys, ...) GCOMM_LOG(GCOMMI_LOG_DEBUG, subsys, __VA_ARGS__)
#ifdef NDEBUG
#define GCOMM_LOG_TRACE(subsys, ...) ((void)0)
#else
#define GCOMM_LOG_TRACE(subsys, ...) GCOMM_LOG(GCOMMI_LOG_TRACE, subsys, __VA_ARGS__)
#endif

#endif /* GCOMM_COMMON_LOG_H */
