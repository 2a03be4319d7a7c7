/*
 * util: what every module shares and nothing else owns: the error value that
 * each layer fills and prefixes (only cli/ prints it), checked 64-bit byte
 * arithmetic, size parsing and printing, a bump arena, and a string map.
 */
#ifndef MP_UTIL_H
#define MP_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* An error as a value: a library function that fails returns -1 or NULL and
 * fills *err; callers may prefix context ("layers[3]: ") before cli prints. */
struct mp_error {
	char msg[1024];
};

void mp_error_set(struct mp_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void mp_error_prefix(struct mp_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* An invariant that stays checked in release builds and names file:line. */
#define MP_ASSERT(c) \
	((c) ? (void)0 : mp_assert_fail(#c, __FILE__, __LINE__))
_Noreturn void mp_assert_fail(const char *what, const char *file, int line);

/* Mark the heap grown since the last call for transparent huge pages
 * (MADV_HUGEPAGE); the first call only notes where it ends.  mp_xmalloc and
 * its kin call it after each allocation. */
void mp_heap_hugepages(void);
/* malloc that never returns NULL: out of memory is an internal error (exit 4). */
void *mp_xmalloc(size_t n);
void *mp_xcalloc(size_t n, size_t size);
void *mp_xrealloc(void *p, size_t n);
char *mp_xstrdup(const char *s);
/* Grow *p (an array of elem-sized items, capacity *cap) to hold need items. */
void mp_grow(void **p, uint32_t *cap, uint32_t need, size_t elem);

/* Checked arithmetic: 0 on success, -1 when the result would not fit. */
static inline int mp_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_add_overflow(a, b, out) ? -1 : 0;
}
static inline int mp_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}

/* FNV-1a over 64-bit words: start from MP_FNV_OFFSET and fold in n words.
 * Fast and well spread; for recognising data again, not for security. */
#define MP_FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define MP_FNV_PRIME UINT64_C(0x100000001b3)
static inline uint64_t mp_fnv_words(uint64_t h, const uint64_t *w, size_t n)
{
	for (size_t k = 0; k < n; k++)
		h = (h ^ w[k]) * MP_FNV_PRIME;
	return h;
}

/* The largest size memplan accepts for one tensor or budget: 1 PiB. Anything
 * larger is a typo, not a network, and refusing it keeps sums far from 2^64. */
#define MP_MAX_BYTES (UINT64_C(1) << 50)
/* The most all of a net's tensors may add up to (64 PiB): sums of any
 * subset then fit in int64 with room to spare. */
#define MP_MAX_NET_BYTES (UINT64_C(1) << 56)

/*
 * Parse a size: a non-negative integer or decimal with an optional binary
 * suffix B, K, M, G, T, P (also KB/KiB, MB/MiB, GB/GiB, TB/TiB, PB/PiB: all
 * powers of 1024, so "11G" = "11GB" = "11GiB" = 11 * 2^30).  Fractions are
 * rounded down to whole bytes.  Returns 0, or -1 with *err saying why.
 */
int mp_parse_size(const char *s, uint64_t *out, struct mp_error *err);

/* Format bytes for people: "886.4 MiB", "12.0 GiB", "512 B".  buf >= 32. */
const char *mp_fmt_bytes(uint64_t bytes, char *buf, size_t n);

/* The bytes of the control character at s: 1 for C0 or DEL, 2 for a UTF-8
 * encoded C1 (U+0080 to U+009F), 0 for anything else. */
static inline unsigned mp_control_len(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;

	if (*u < 0x20 || *u == 0x7f)
		return *u ? 1 : 0;
	return u[0] == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f ? 2 : 0;
}

/* The offset of the first control character in s (mp_control_len), or -1.
 * Names must not hold one: they reach terminals. */
long mp_find_control(const char *s);

/* The median of v[0..n), n >= 1: v is sorted in place (ascending). */
double mp_median(double *v, uint32_t n);

/* Bump arena: many small allocations, one free.  Owned by whoever embeds it. */
struct mp_arena {
	struct mp_arena_chunk *head;
};
void *mp_arena_alloc(struct mp_arena *a, size_t n); /* zeroed, 16-aligned */
void *mp_arena_alloc_raw(struct mp_arena *a, size_t n); /* not zeroed */
char *mp_arena_strdup(struct mp_arena *a, const char *s);
void mp_arena_release(struct mp_arena *a);

/* String -> int32 map (open addressing).  Keys are borrowed, not copied. */
struct mp_strmap {
	uint32_t cap, n;
	const char **key; /* [cap] */
	int32_t *val;     /* [cap] */
};
void mp_strmap_init(struct mp_strmap *m);
void mp_strmap_release(struct mp_strmap *m);
/* Size the table for n keys up front (avoids rehashing big nets). */
void mp_strmap_reserve(struct mp_strmap *m, uint32_t n);
/* Insert key -> val; returns the existing value (and changes nothing) if the
 * key is present, else -1. */
int32_t mp_strmap_put(struct mp_strmap *m, const char *key, int32_t val);
int32_t mp_strmap_get(const struct mp_strmap *m, const char *key); /* -1 */

#endif
