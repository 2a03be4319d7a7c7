/*
 * First-fit pool of 1 KiB blocks (SuperNeurons 3.2.1: "the memory pool finds
 * the first node with enough free memory from the empty list").  The empty
 * list is an array of free runs sorted by address; allocation scans it for
 * the first run long enough and cuts the allocation from its start; a free
 * inserts its run and merges it with touching neighbours.  O(free runs) per
 * call.
 */
#include "pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/base/util.h"

uint64_t pool_blocks(uint64_t bytes)
{
	return bytes / POOL_BLOCK_BYTES + (bytes % POOL_BLOCK_BYTES != 0);
}

void pool_init(struct mp_pool *p, uint64_t bytes)
{
	memset(p, 0, sizeof(*p));
	p->blocks = bytes / POOL_BLOCK_BYTES;
	pool_reset(p);
}

void pool_release(struct mp_pool *p)
{
	free(p->free);
	memset(p, 0, sizeof(*p));
}

void pool_reset(struct mp_pool *p)
{
	p->n_free = 0;
	p->used_blocks = 0;
	if (p->blocks) {
		mp_grow((void **)&p->free, &p->cap_free, 1, sizeof(*p->free));
		p->free[0] = (struct pool_run){ 0, p->blocks };
		p->n_free = 1;
	}
}

uint64_t pool_alloc(struct mp_pool *p, uint64_t bytes)
{
	uint64_t n = pool_blocks(bytes), at;

	if (n == 0)
		return 0;
	for (uint32_t k = 0; k < p->n_free; k++) {
		struct pool_run *r = &p->free[k];

		if (r->n < n)
			continue;
		at = r->at;
		r->at += n;
		r->n -= n;
		if (r->n == 0) {
			memmove(r, r + 1, (p->n_free - k - 1) * sizeof(*r));
			p->n_free--;
		}
		p->used_blocks += n;
		if (at + n > p->high_blocks)
			p->high_blocks = at + n;
		return at * POOL_BLOCK_BYTES;
	}
	return UINT64_MAX;
}

int pool_take(struct mp_pool *p, uint64_t off, uint64_t bytes)
{
	uint64_t n = pool_blocks(bytes), at = off / POOL_BLOCK_BYTES;

	if (n == 0)
		return 0;
	if (off % POOL_BLOCK_BYTES)
		return -1;
	for (uint32_t k = 0; k < p->n_free; k++) {
		struct pool_run *r = &p->free[k];

		if (r->at > at || r->at + r->n < at + n)
			continue;
		/* split r into what lies before and after the taken blocks */
		if (r->at < at && r->at + r->n > at + n) {
			mp_grow((void **)&p->free, &p->cap_free, p->n_free + 1, sizeof(*p->free));
			r = &p->free[k];
			memmove(r + 2, r + 1, (p->n_free - k - 1) * sizeof(*r));
			r[1] = (struct pool_run){ at + n, r->at + r->n - (at + n) };
			r->n = at - r->at;
			p->n_free++;
		} else if (r->at < at) {
			r->n = at - r->at;
		} else if (r->at + r->n > at + n) {
			r->n -= at + n - r->at;
			r->at = at + n;
		} else {
			memmove(r, r + 1, (p->n_free - k - 1) * sizeof(*r));
			p->n_free--;
		}
		p->used_blocks += n;
		if (at + n > p->high_blocks)
			p->high_blocks = at + n;
		return 0;
	}
	return -1;
}

void pool_free(struct mp_pool *p, uint64_t off, uint64_t bytes)
{
	uint64_t n = pool_blocks(bytes), at = off / POOL_BLOCK_BYTES;
	uint32_t lo = 0, hi = p->n_free, k;
	struct pool_run *r;

	if (n == 0)
		return;
	MP_ASSERT(off % POOL_BLOCK_BYTES == 0 && at + n <= p->blocks && p->used_blocks >= n);
	/* k: the first free run after the freed one */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (p->free[mid].at < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	k = lo;
	MP_ASSERT(k == p->n_free || p->free[k].at >= at + n);           /* no double free */
	MP_ASSERT(k == 0 || p->free[k - 1].at + p->free[k - 1].n <= at);
	p->used_blocks -= n;
	if (k > 0 && p->free[k - 1].at + p->free[k - 1].n == at) {
		r = &p->free[k - 1];
		r->n += n;
		if (k < p->n_free && r->at + r->n == p->free[k].at) {
			r->n += p->free[k].n;
			memmove(&p->free[k], &p->free[k + 1], (p->n_free - k - 1) * sizeof(*r));
			p->n_free--;
		}
		return;
	}
	if (k < p->n_free && at + n == p->free[k].at) {
		p->free[k].at = at;
		p->free[k].n += n;
		return;
	}
	mp_grow((void **)&p->free, &p->cap_free, p->n_free + 1, sizeof(*p->free));
	memmove(&p->free[k + 1], &p->free[k], (p->n_free - k) * sizeof(*p->free));
	p->free[k] = (struct pool_run){ at, n };
	p->n_free++;
}

uint64_t pool_largest_free(const struct mp_pool *p)
{
	uint64_t best = 0;

	for (uint32_t k = 0; k < p->n_free; k++)
		if (p->free[k].n > best)
			best = p->free[k].n;
	return best * POOL_BLOCK_BYTES;
}

const char *pool_refusal(const struct mp_pool *p, uint64_t bytes, char *buf, size_t n)
{
	char b1[32];

	snprintf(buf, n, "the pool (%llu bytes in %u-byte blocks) has no free run of %llu blocks "
		 "(largest free run %llu bytes, %s in use)",
		 (unsigned long long)(p->blocks * POOL_BLOCK_BYTES), POOL_BLOCK_BYTES,
		 (unsigned long long)pool_blocks(bytes), (unsigned long long)pool_largest_free(p),
		 mp_fmt_bytes(p->used_blocks * POOL_BLOCK_BYTES, b1, sizeof(b1)));
	return buf;
}
