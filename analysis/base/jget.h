/*
 * jget: typed reads from jansson values with the JSON path in every error
 * ("layers[3].time.fwd: expected a number of milliseconds >= 0, got \"fast\"").
 * Values returned are borrowed from the json_t they came from.
 */
#ifndef MP_JGET_H
#define MP_JGET_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* Join a path and a key: ("layers[3]", "time") -> "layers[3].time"; ("", "x") -> "x". */
static inline const char *jget_path(char *buf, size_t n, const char *path,
				    const char *key)
{
	size_t lp = strlen(path), lk = strlen(key), i = 0;

	/* hot on large nets: memcpy instead of snprintf; cut to fit */
	if (lp > n - 1)
		lp = n - 1;
	memcpy(buf, path, lp);
	i = lp;
	if (lp && i < n - 1)
		buf[i++] = '.';
	if (lk > n - 1 - i)
		lk = n - 1 - i;
	memcpy(buf + i, key, lk);
	buf[i + lk] = '\0';
	return buf;
}

/* Read and parse a whole JSON file (duplicate keys rejected; empty files,
 * byte order marks and NUL bytes named); NULL with *err ("line 3, column 14:
 * invalid JSON: ...", or why it cannot be read). */
json_t *mp_json_load_file(const char *path, struct mp_error *err);

/* The same for len bytes already in memory (the file's contents): a new
 * reference, or NULL with *err.  NUL bytes are not named here (mp_json_load_file
 * names them before parsing). */
json_t *mp_json_load_buffer(const char *buf, size_t len, struct mp_error *err);

/*
 * jansson's allocations in a bump arena, from begin to end: for a tree that
 * is built, used and dropped whole (a net file's parse, a plan file's
 * writing), whose hundreds of thousands of small nodes are then neither
 * freed one by one nor left for malloc to consolidate.  Nothing allocated
 * inside may outlive end; nothing allocated outside may be freed inside (its
 * memory would be kept: incref and decref of an outside tree are fine).
 * Not nested.
 */
struct mp_json_arena {
	struct mp_arena arena;
	json_malloc_t old_malloc;
	json_free_t old_free;
};

void mp_json_arena_begin(struct mp_json_arena *ja);
void mp_json_arena_end(struct mp_json_arena *ja);

/* The largest JSON file memplan reads: 1 GiB (a 10^5-layer net is 14 MB). */
#define MP_MAX_JSON_BYTES (UINT64_C(1) << 30)

/* Index a path: ("layers[3].inputs", 0) -> "layers[3].inputs[0]".  Like
 * jget_path, hot on big nets, so no printf. */
static inline const char *jget_index(char *buf, size_t n, const char *path, size_t idx)
{
	char digits[24];
	size_t lp = strlen(path), nd = 0, i;

	do {
		digits[nd++] = (char)('0' + idx % 10);
		idx /= 10;
	} while (idx && nd < sizeof(digits));
	if (lp + nd + 3 > n) { /* cut, as snprintf would */
		snprintf(buf, n, "%s[...]", path);
		return buf;
	}
	memcpy(buf, path, lp);
	i = lp;
	buf[i++] = '[';
	while (nd)
		buf[i++] = digits[--nd];
	buf[i++] = ']';
	buf[i] = '\0';
	return buf;
}

/* A short description of a JSON value's type for messages ("a string"). */
const char *jget_type(const json_t *v);

/* Fail on any key of obj not in allowed (NULL-terminated). */
int jget_check_keys(const json_t *obj, const char *path,
		    const char *const *allowed, struct mp_error *err);

/* obj must be an object; path names it. */
int jget_object(const json_t *v, const char *path, struct mp_error *err);

/* A non-empty string. */
int jget_string(const json_t *v, const char *path, const char **out,
		struct mp_error *err);

/* A size: a non-negative integer of bytes, or a string with a unit ("24M"). */
int jget_size(const json_t *v, const char *path, uint64_t *out,
	      struct mp_error *err);

/* A finite number, of any sign. */
int jget_finite(const json_t *v, const char *path, double *out, struct mp_error *err);

/* A finite number >= 0 (milliseconds, GB/s, ...). */
int jget_nonneg(const json_t *v, const char *path, double *out,
		struct mp_error *err);

/* A positive finite number (bandwidths). */
int jget_positive(const json_t *v, const char *path, double *out,
		  struct mp_error *err);

/* A finite number in [lo, hi]; unit names it in the message ("ms"). */
int jget_range(const json_t *v, const char *path, double lo, double hi,
	       const char *unit, double *out, struct mp_error *err);

/* A duration in milliseconds: [0, 1e9] (an op of more than 11 days is a typo
 * and would make sums meaningless). */
#define MP_MAX_MS 1e9
static inline int jget_ms(const json_t *v, const char *path, double *out,
			  struct mp_error *err)
{
	return jget_range(v, path, 0, MP_MAX_MS, "ms", out, err);
}

/* An integer in [lo, hi]. */
int jget_int(const json_t *v, const char *path, int64_t lo, int64_t hi,
	     int64_t *out, struct mp_error *err);

/* A boolean. */
int jget_bool(const json_t *v, const char *path, int *out, struct mp_error *err);

#endif
