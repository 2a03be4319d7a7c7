/*
 * Shared helpers: errors as values, checked sizes, an arena and a string map.
 */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

void mp_error_set(struct mp_error *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

void mp_error_prefix(struct mp_error *err, const char *fmt, ...)
{
	char prefix[512];
	size_t n, len, keep;
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	n = strlen(prefix);
	len = strlen(err->msg);
	keep = sizeof(err->msg) - 1 - n; /* n < 512 < sizeof(msg) */
	if (len > keep)
		len = keep;
	memmove(err->msg + n, err->msg, len);
	memcpy(err->msg, prefix, n);
	err->msg[n + len] = '\0';
}

void mp_assert_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "memplan: internal error: %s:%d: assertion '%s' failed\n",
		file, line, what);
	fflush(stderr);
	abort();
}

static _Noreturn void oom(size_t n)
{
	fprintf(stderr, "memplan: internal error: out of memory (%zu bytes)\n", n);
	exit(4);
}

/*
 * The heap in transparent huge pages where the kernel gives them on request
 * (/sys/kernel/mm/transparent_hugepage/enabled "madvise", as on this
 * project's machines): what the heap gained since the last look is marked
 * MADV_HUGEPAGE, as glibc's glibc.malloc.hugetlb=1 tunable marks it (which
 * also rounds the heap's growth to 2 MiB; a program cannot set the tunable
 * for itself).  main grows the heap 64 MiB at a time (M_TOP_PAD), so most
 * of each step is marked before it is touched; what realloc copies into it,
 * or a library's own malloc writes, before the next call here is not (on
 * the 10^5-layer fchain 334 of analyze's 366 MB of heap are huge pages).
 * memplan's working set is a few large arrays (schedules, event lists, the
 * arena's lists) of up to hundreds of MB, which main keeps in the heap
 * (M_MMAP_THRESHOLD); in 4 KiB pages, page faults and TLB misses were
 * nearly half of analysing the 10^5-layer fchain (2.30 -> 1.36 s of CPU,
 * the mean of 7).  sbrk(0) reads glibc's cached break, no system call.
 * Without THP, or under a sanitizer's allocator (the break does not move),
 * nothing changes.  seen is atomic for verify's engine threads; a race at
 * worst advises a range twice.
 */
void mp_heap_hugepages(void)
{
	static _Atomic uintptr_t seen;
	uintptr_t was = atomic_load_explicit(&seen, memory_order_relaxed);
	uintptr_t top = (uintptr_t)sbrk(0), lo;
	long page;

	if (top == (uintptr_t)-1 || top == was)
		return;
	page = sysconf(_SC_PAGESIZE); /* (glibc's cached value) */
	lo = was & ~(uintptr_t)(page > 0 ? page - 1 : 4095);
	if (was && top > was)
		madvise((void *)lo, top - lo, MADV_HUGEPAGE); /* advice: its failure changes nothing */
	atomic_store_explicit(&seen, top, memory_order_relaxed);
}

void *mp_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		oom(n);
	mp_heap_hugepages();
	return p;
}

void *mp_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		oom(n * size);
	mp_heap_hugepages();
	return p;
}

void *mp_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		oom(n);
	mp_heap_hugepages();
	return q;
}

char *mp_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(mp_xmalloc(n), s, n);
}

void mp_grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint64_t c = *cap;

	if (need <= *cap)
		return;
	while (c < need)
		c = c ? c * 2 : 16;
	if (c > UINT32_MAX)
		c = UINT32_MAX;
	*p = mp_xrealloc(*p, (size_t)c * elem);
	*cap = (uint32_t)c;
}

static const struct {
	const char *name;
	unsigned shift;
} suffixes[] = {
	{ "", 0 },    { "b", 0 },   { "k", 10 },  { "kb", 10 }, { "kib", 10 },
	{ "m", 20 },  { "mb", 20 }, { "mib", 20 }, { "g", 30 }, { "gb", 30 },
	{ "gib", 30 }, { "t", 40 }, { "tb", 40 }, { "tib", 40 }, { "p", 50 },
	{ "pb", 50 }, { "pib", 50 },
};

int mp_parse_size(const char *s, uint64_t *out, struct mp_error *err)
{
	const char *p = s, *num_end;
	char unit[8];
	size_t ulen = 0;
	double v;
	int shift = -1;

	while (isspace((unsigned char)*p))
		p++;
	if (!isdigit((unsigned char)*p) && *p != '.') {
		mp_error_set(err, "'%s' is not a size (expected a number with an optional unit such as 512M or 11G)", s);
		return -1;
	}
	while (isdigit((unsigned char)*p) || *p == '.')
		p++;
	num_end = p;
	while (isspace((unsigned char)*p))
		p++;
	while (isalpha((unsigned char)*p) && ulen < sizeof(unit) - 1)
		unit[ulen++] = (char)tolower((unsigned char)*p++);
	unit[ulen] = '\0';
	while (isspace((unsigned char)*p))
		p++;
	if (*p) {
		mp_error_set(err, "'%s' is not a size (expected a number with an optional unit such as 512M or 11G)", s);
		return -1;
	}
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (!strcmp(unit, suffixes[i].name))
			shift = (int)suffixes[i].shift;
	if (shift < 0) {
		mp_error_set(err, "'%s': unknown unit '%s' (use B, K, M, G, T or P; all powers of 1024)", s, unit);
		return -1;
	}
	{
		char buf[64];
		size_t n = (size_t)(num_end - s);
		char *end;

		if (n >= sizeof(buf)) {
			mp_error_set(err, "'%s' is too large a size", s);
			return -1;
		}
		memcpy(buf, s, n);
		buf[n] = '\0';
		errno = 0;
		v = strtod(buf, &end);
		while (isspace((unsigned char)*end))
			end++;
		if (errno || *end || !isfinite(v)) {
			mp_error_set(err, "'%s' is not a size", s);
			return -1;
		}
	}
	v = ldexp(v, shift);
	if (v > (double)MP_MAX_BYTES) {
		mp_error_set(err, "'%s' is larger than the 1 PiB memplan accepts", s);
		return -1;
	}
	*out = (uint64_t)v;
	return 0;
}

const char *mp_fmt_bytes(uint64_t bytes, char *buf, size_t n)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, n, "%.1f %s", v, units[u]);
	return buf;
}

struct mp_arena_chunk {
	struct mp_arena_chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

void *mp_arena_alloc(struct mp_arena *a, size_t n)
{
	void *p = mp_arena_alloc_raw(a, n);

	memset(p, 0, n);
	return p;
}

void *mp_arena_alloc_raw(struct mp_arena *a, size_t n)
{
	struct mp_arena_chunk *c = a->head;
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > (1u << 20) ? n : (1u << 20);

		c = mp_xmalloc(sizeof(*c) + cap);
		c->next = a->head;
		c->used = 0;
		c->cap = cap;
		a->head = c;
	}
	p = c->data + c->used;
	c->used += n;
	return p;
}

char *mp_arena_strdup(struct mp_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(mp_arena_alloc(a, n), s, n);
}

void mp_arena_release(struct mp_arena *a)
{
	struct mp_arena_chunk *c = a->head;

	while (c) {
		struct mp_arena_chunk *next = c->next;

		free(c);
		c = next;
	}
	a->head = NULL;
}

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

void mp_strmap_init(struct mp_strmap *m)
{
	memset(m, 0, sizeof(*m));
}

void mp_strmap_release(struct mp_strmap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof(*m));
}

static void strmap_rehash(struct mp_strmap *m, uint32_t cap)
{
	const char **okey = m->key;
	int32_t *oval = m->val;
	uint32_t ocap = m->cap;

	m->key = mp_xcalloc(cap, sizeof(*m->key));
	m->val = mp_xcalloc(cap, sizeof(*m->val));
	m->cap = cap;
	m->n = 0;
	for (uint32_t i = 0; i < ocap; i++)
		if (okey[i])
			mp_strmap_put(m, okey[i], oval[i]);
	free(okey);
	free(oval);
}

void mp_strmap_reserve(struct mp_strmap *m, uint32_t n)
{
	uint32_t cap = 64;

	while (cap < 2 * (uint64_t)n + 2 && cap < (1u << 31))
		cap *= 2;
	if (cap > m->cap)
		strmap_rehash(m, cap);
}

int32_t mp_strmap_put(struct mp_strmap *m, const char *key, int32_t val)
{
	uint32_t i;

	if ((uint64_t)(m->n + 1) * 2 > m->cap)
		strmap_rehash(m, m->cap ? m->cap * 2 : 64);
	for (i = hash_str(key) & (m->cap - 1); m->key[i]; i = (i + 1) & (m->cap - 1))
		if (!strcmp(m->key[i], key))
			return m->val[i];
	m->key[i] = key;
	m->val[i] = val;
	m->n++;
	return -1;
}

int32_t mp_strmap_get(const struct mp_strmap *m, const char *key)
{
	if (!m->cap)
		return -1;
	for (uint32_t i = hash_str(key) & (m->cap - 1); m->key[i]; i = (i + 1) & (m->cap - 1))
		if (!strcmp(m->key[i], key))
			return m->val[i];
	return -1;
}

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return a < b ? -1 : a > b;
}

double mp_median(double *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

long mp_find_control(const char *s)
{
	for (const char *p = s; *p; p++)
		if (mp_control_len(p))
			return (long)(p - s);
	return -1;
}
