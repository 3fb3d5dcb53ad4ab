/* gcomm_log's host formatting (src/rma/devlog.c): device argument words rendered like printf. */
#include <string.h>

#include "rma/devlog.h"
#include "testutil.h"

static uint64_t dbl(double d)
{
    uint64_t w;
    memcpy(&w, &d, sizeof(w));
    return w;
}

static void expect(const char *fmt, const uint64_t *a, int n, const char *want)
{
    char out[256];
    gcommi_devlog_format(fmt, a, n, out, sizeof(out));
    TEST_CHECK(strcmp(out, want) == 0, "format '%s': got '%s', want '%s'", fmt, out, want);
}

int main(void)
{
    uint64_t a[8] = {(uint64_t)(int64_t)-42, 7, dbl(3.25), 255, 'x', (uint64_t)(int64_t)-1, 5, 2};
    expect("plain text\n", NULL, 0, "plain text\n");
    expect("%d %u %g", a, 3, "-42 7 3.25");
    expect("[%5d|%-4u|%.3f]", a, 3, "[  -42|7   |3.250]");
    expect("%x %X %o %c", (uint64_t[]){255, 255, 8, 'x'}, 4, "ff FF 10 x");
    expect("%ld %lld", a, 2, "-42 7");          /* length modifiers: the words are 64-bit anyway */
    expect("100%% %d", a, 1, "100% -42");
    expect("%*d|%.*f", (uint64_t[]){4, 9, 2, dbl(1.005)}, 4, "   9|1.00");
    expect("%d %d", a, 1, "-42 <?>");              /* missing argument */
    expect("%s!", a, 1, "<string>!");
    expect("%e", (uint64_t[]){dbl(-1e-300)}, 1, "-1.000000e-300");
    expect("%lld", (uint64_t[]){(uint64_t)INT64_MIN}, 1, "-9223372036854775808");
    expect("%y %d", a, 2, "<?> -42");              /* unknown conversion consumes nothing */
    /* truncation: always terminated */
    char small[8];
    size_t n = gcommi_devlog_format("abcdefghijk %d", a, 1, small, sizeof(small));
    TEST_CHECK(n == 7 && strcmp(small, "abcdefg") == 0, "truncated to '%s' (%zu)", small, n);
    return gcommt_finish("test_devlog");
}
