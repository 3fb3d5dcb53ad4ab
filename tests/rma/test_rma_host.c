/* The notified-RMA host API where no GPU is needed: argument checks, init/finalize order,
 * GCOMM_DEVICES parsing, and what a process without a GPU gets (zero GPUs; memory and launches
 * answer GCOMM_ERR_NO_DEVICE) — so CI, which has no GPU, covers these paths. */
#include <stdlib.h>
#include <string.h>

#include "rma/bootstrap.h"
#include "testutil.h"

static void test_parse_devices(void)
{
    int d[GCOMM_MAX_GPUS];
    TEST_CHECK(gcommi_parse_devices("", d, GCOMM_MAX_GPUS) == 0, "empty list");
    TEST_CHECK(gcommi_parse_devices("0,2,1", d, GCOMM_MAX_GPUS) == 3 && d[0] == 0 && d[1] == 2 &&
                   d[2] == 1, "0,2,1");
    TEST_CHECK(gcommi_parse_devices("3", d, GCOMM_MAX_GPUS) == 1 && d[0] == 3, "3");
    TEST_CHECK(gcommi_parse_devices("none", d, GCOMM_MAX_GPUS) == 0, "none: no device");
    TEST_RC(GCOMM_ERR_ARG, gcommi_parse_devices("none,0", d, GCOMM_MAX_GPUS));
    TEST_RC(GCOMM_ERR_ARG, gcommi_parse_devices("0,,1", d, GCOMM_MAX_GPUS));
    TEST_RC(GCOMM_ERR_ARG, gcommi_parse_devices("a", d, GCOMM_MAX_GPUS));
    TEST_RC(GCOMM_ERR_ARG, gcommi_parse_devices("-1", d, GCOMM_MAX_GPUS));
    TEST_RC(GCOMM_ERR_ARG, gcommi_parse_devices("1,1", d, GCOMM_MAX_GPUS));
    TEST_RC(GCOMM_ERR_ARG, gcommi_parse_devices("0,1,2", d, 2));
    TEST_CHECK(strstr(gcomm_last_error_detail(), "more than 2") != NULL, "detail: %s",
               gcomm_last_error_detail());
}

int main(void)
{
    int flag = -1, n = -1, first = -1, dev[GCOMM_MAX_GPUS];
    void *p = NULL;
    gcomm_launch_t l;
    memset(&l, 0, sizeof(l));

    test_parse_devices();

    /* before gcomm_init */
    TEST_OK(gcomm_initialized(&flag));
    TEST_CHECK(flag == 0, "initialised before gcomm_init");
    TEST_RC(GCOMM_ERR_ARG, gcomm_initialized(NULL));
    TEST_RC(GCOMM_ERR_ARG, gcomm_finalize());
    TEST_RC(GCOMM_ERR_ARG, gcomm_local_devices(&n, dev));
    TEST_RC(GCOMM_ERR_ARG, gcomm_job_gpus(&n, &first));
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch(NULL));

    /* Where a GPU is visible the same checks run; what needs its absence runs only without. */
    TEST_OK(gcomm_init());
    TEST_RC(GCOMM_ERR_ARG, gcomm_init()); /* twice */
    TEST_OK(gcomm_initialized(&flag));
    TEST_CHECK(flag == 1, "not initialised after gcomm_init");
    TEST_OK(gcomm_local_devices(&n, dev));
    TEST_OK(gcomm_job_gpus(&flag, &first));
    TEST_CHECK(flag == n && first == 0, "one process: job GPUs %d (local %d), first %d", flag, n,
               first);
    TEST_RC(GCOMM_ERR_ARG, gcomm_local_devices(NULL, dev));
    TEST_RC(GCOMM_ERR_ARG, gcomm_job_gpus(NULL, &first));
    TEST_RC(GCOMM_ERR_ARG, gcomm_malloc(16, NULL));
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch(NULL));
    l.kernel = NULL;
    l.threads_per_block = 64;
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch(&l)); /* no kernel */
    l.kernel = (const void *)&l;
    l.threads_per_block = 0;
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch(&l));
    l.threads_per_block = 2048;
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch(&l));
    l.threads_per_block = 64;
    l.blocks_per_gpu = -1;
    TEST_RC(GCOMM_ERR_ARG, gcomm_launch(&l));
    TEST_CHECK(strstr(gcomm_last_error_detail(), "blocks_per_gpu = -1") != NULL, "detail: %s",
               gcomm_last_error_detail());
    TEST_OK(gcomm_free(NULL));
    TEST_RC(GCOMM_ERR_ARG, gcomm_register(NULL, 16));
    if (n == 0) { /* no GPU: nothing to allocate or launch on */
        l.blocks_per_gpu = 1;
        TEST_RC(GCOMM_ERR_NO_DEVICE, gcomm_launch(&l));
        int rc = gcomm_malloc(16, &p);
        TEST_CHECK(rc == GCOMM_ERR_NO_DEVICE, "gcomm_malloc without a GPU: %d (%s)", rc,
                   gcomm_last_error_detail());
        int x;
        rc = gcomm_register(&x, sizeof(x));
        TEST_CHECK(rc == GCOMM_ERR_ARG || rc == GCOMM_ERR_NO_DEVICE,
                   "gcomm_register of host memory: %d", rc);
    }
    TEST_OK(gcomm_finalize());
    TEST_RC(GCOMM_ERR_ARG, gcomm_finalize()); /* twice */
    TEST_OK(gcomm_initialized(&flag));
    TEST_CHECK(flag == 0, "initialised after gcomm_finalize");
    /* and again */
    TEST_OK(gcomm_init());
    TEST_OK(gcomm_finalize());
    printf("test_rma_host: %d local GPU(s)\n", n);
    return gcommt_finish("test_rma_host");
}
