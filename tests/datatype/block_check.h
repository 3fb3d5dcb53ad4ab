/* A typemap written out as a list of blocks, and the check of gcomm_pack / gcomm_unpack against it
 * (test_dt_large, test_dt_vector_blocks): the reference copies block by block from a list written
 * from a shape's definition, not from the engine. */
#ifndef GCOMMT_BLOCK_CHECK_H
#define GCOMMT_BLOCK_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "gcomm/datatype.h"

/* One block of the typemap, in packing order: bytes [off, off + len) of the typed buffer. */
typedef struct {
    size_t off, len;
} block_t;

typedef struct {
    block_t *b;
    size_t n, cap;
    size_t packed, span; /* bytes packed; bytes of the typed buffer the blocks lie in */
} blocks_t;

/* Appends a block (merged with the previous one when they abut); -1 when out of memory. */
int blocks_add(blocks_t *l, size_t off, size_t len);

/* Packs and unpacks count x t, whose origin is `origin` bytes into the typed span of l, against
 * the block list: gcomm_pack_size, the packed bytes and position, the same stream in three ranges
 * cut inside blocks (gcomm_pack_range), the unpack of other data into a poisoned buffer (every
 * byte outside the blocks must stay poisoned), and the same in three ranges. The typed buffers lie
 * `shift` bytes past a page, the packed one `packed_shift`. The cuts fall on multiples of 8 bytes,
 * or, with odd_cuts, on odd bytes. Random data from *rng; failures go to the harness. */
void blocks_check(const char *name, gcomm_datatype t, size_t count, const blocks_t *l,
                  size_t origin, size_t shift, size_t packed_shift, int odd_cuts, uint64_t *rng);

#endif
