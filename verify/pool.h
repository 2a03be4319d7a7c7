/*
 * pool: the first-fit memory pool of SuperNeurons 3.2.1, used by `memplan
 * verify --alloc pool` to measure what a heap allocator makes of a schedule
 * (fragmentation) where the plan's static arena offsets are not used.  One
 * preallocated range divided into 1 KiB blocks; an allocation takes the
 * first free run of enough blocks (lowest address); a free returns its run
 * and merges it with free neighbours.  The pool manages offsets only: the
 * caller owns the memory they index and remembers each allocation's offset
 * and size (SuperNeurons' allocated list with its ID-to-node table).  Owns
 * struct mp_pool.
 */
#ifndef MP_POOL_H
#define MP_POOL_H

#include <stddef.h>
#include <stdint.h>

/* SuperNeurons' basic storage unit. */
#define POOL_BLOCK_BYTES 1024u

struct pool_run {
	uint64_t at, n;          /* first block, blocks */
};

struct mp_pool {
	uint64_t blocks;         /* capacity in blocks */
	uint32_t n_free, cap_free;
	struct pool_run *free;   /* [n_free] sorted by at, disjoint, none touching; owned */
	uint64_t used_blocks;    /* blocks allocated now */
	uint64_t high_blocks;    /* high-water: the highest block end ever allocated */
};

/* A pool of bytes (rounded down to whole blocks) with nothing allocated. */
void pool_init(struct mp_pool *p, uint64_t bytes);
void pool_release(struct mp_pool *p);
/* Free everything; the high-water mark is kept. */
void pool_reset(struct mp_pool *p);

/* Blocks an allocation of bytes takes (0 for 0 bytes). */
uint64_t pool_blocks(uint64_t bytes);

/* First fit: the byte offset of a run of pool_blocks(bytes) blocks, or
 * UINT64_MAX when no free run is long enough.  Zero bytes take no block and
 * get offset 0.  O(free runs). */
uint64_t pool_alloc(struct mp_pool *p, uint64_t bytes);

/* Take the blocks of an allocation of bytes at byte offset off (block
 * aligned), where something kept across a pool_reset already lies: 0, or -1
 * (nothing taken) when they are not all free.  O(free runs). */
int pool_take(struct mp_pool *p, uint64_t off, uint64_t bytes);

/* Return the run at byte offset off of an allocation of bytes.  O(free runs). */
void pool_free(struct mp_pool *p, uint64_t off, uint64_t bytes);

/* The longest free run, in bytes (what the largest allocation could get). */
uint64_t pool_largest_free(const struct mp_pool *p);

/* Why pool_alloc(p, bytes) failed, for a violation: "the pool (N bytes in
 * 1024-byte blocks) has no free run of K blocks (largest free run L bytes,
 * U in use)", into buf[n].  Returns buf. */
const char *pool_refusal(const struct mp_pool *p, uint64_t bytes, char *buf, size_t n);

#endif
