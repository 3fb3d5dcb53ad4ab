/* The host side of gcomm_log: formatting a device record (format + 64-bit argument words) and
 * printing a GPU's records after a launch. Free of CUDA, tested on the CPU. */
#ifndef GCOMM_RMA_DEVLOG_H
#define GCOMM_RMA_DEVLOG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gcomm/detail/rt.h"

/* Formats like snprintf, reading the arguments from 64-bit words: integer conversions take them
 * as 64-bit integers, floating-point conversions as the bits of a double, %p as an address, %s
 * prints "<string>" (device strings are not readable here). A missing argument prints "<?>".
 * Always NUL-terminates; returns the length written. */
size_t gcommi_devlog_format(const char *fmt, const uint64_t *args, int nargs, char *out,
                            size_t outsize);

/* Prints the records of one GPU's log (claimed = how many the device claimed, possibly more than
 * the GCOMMI_LOG_RECORDS kept), one line prefix per record naming the rank. */
void gcommi_devlog_print(FILE *f, const gcommi_log_rec_t *recs, uint32_t claimed, int gpu);

#endif /* GCOMM_RMA_DEVLOG_H */
