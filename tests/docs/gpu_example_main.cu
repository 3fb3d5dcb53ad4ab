/* main() of the guide's GPU examples when CTest runs them: skipped (77) on a machine without a
 * GPU, as every GPU test is, else the example itself, whose main the build renames
 * doc_example_main (tests/CMakeLists.txt). */
#include <cuda_runtime_api.h>
#include <stdio.h>

int doc_example_main(void);

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("no GPU: the example is compiled, not run (skipped)\n");
        return 77;
    }
    return doc_example_main();
}
