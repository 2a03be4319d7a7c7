/*
 * Typed JSON reads with paths in errors.
 */
#include "jget.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>

const char *jget_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE: return "true";
	case JSON_FALSE: return "false";
	case JSON_NULL: return "null";
	}
	return "a value";
}

int jget_check_keys(const json_t *obj, const char *path,
		    const char *const *allowed, struct mp_error *err)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v) {
		const char *const *a;
		char list[512] = "";
		size_t used = 0;

		for (a = allowed; *a; a++)
			if (!strcmp(*a, key))
				break;
		if (*a)
			continue;
		for (a = allowed; *a && used + strlen(*a) + 3 < sizeof(list); a++)
			used += (size_t)snprintf(list + used, sizeof(list) - used,
						 "%s%s", a == allowed ? "" : ", ", *a);
		mp_error_set(err, "%s%s%s: unknown key (expected one of: %s)", path,
			     *path ? "." : "", key, list);
		return -1;
	}
	return 0;
}

int jget_object(const json_t *v, const char *path, struct mp_error *err)
{
	if (json_is_object(v))
		return 0;
	mp_error_set(err, "%s: expected an object, got %s", path, jget_type(v));
	return -1;
}

int jget_string(const json_t *v, const char *path, const char **out,
		struct mp_error *err)
{
	long at;

	if (!json_is_string(v)) {
		mp_error_set(err, "%s: expected a string, got %s", path, jget_type(v));
		return -1;
	}
	if (!*json_string_value(v)) {
		mp_error_set(err, "%s: expected a non-empty string", path);
		return -1;
	}
	if (strlen(json_string_value(v)) != json_string_length(v)) {
		mp_error_set(err, "%s: string contains a NUL character", path);
		return -1;
	}
	if ((at = mp_find_control(json_string_value(v))) >= 0) {
		const unsigned char *u = (const unsigned char *)json_string_value(v) + at;

		mp_error_set(err, "%s: control character U+%04X at byte %ld (names and keywords reach terminals and reports)",
			     path, u[0] == 0xc2 ? u[1] : u[0], at);
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}

int jget_size(const json_t *v, const char *path, uint64_t *out,
	      struct mp_error *err)
{
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < 0) {
			mp_error_set(err, "%s: size must not be negative, got %lld", path, (long long)i);
			return -1;
		}
		if ((uint64_t)i > MP_MAX_BYTES) {
			mp_error_set(err, "%s: %lld bytes is larger than the 1 PiB memplan accepts", path, (long long)i);
			return -1;
		}
		*out = (uint64_t)i;
		return 0;
	}
	if (json_is_real(v)) {
		mp_error_set(err, "%s: expected a whole number of bytes or a string with a unit such as \"24M\", got %g", path, json_real_value(v));
		return -1;
	}
	if (json_is_string(v)) {
		if (mp_parse_size(json_string_value(v), out, err) < 0) {
			mp_error_prefix(err, "%s: ", path);
			return -1;
		}
		return 0;
	}
	mp_error_set(err, "%s: expected a size (bytes, or a string such as \"24M\"), got %s", path, jget_type(v));
	return -1;
}

int jget_finite(const json_t *v, const char *path, double *out, struct mp_error *err)
{
	if (!json_is_number(v)) {
		mp_error_set(err, "%s: expected a number, got %s", path, jget_type(v));
		return -1;
	}
	*out = json_number_value(v);
	if (!isfinite(*out)) {
		mp_error_set(err, "%s: expected a finite number", path);
		return -1;
	}
	return 0;
}

int jget_nonneg(const json_t *v, const char *path, double *out,
		struct mp_error *err)
{
	if (jget_finite(v, path, out, err) < 0)
		return -1;
	if (*out < 0) {
		mp_error_set(err, "%s: must not be negative, got %g", path, *out);
		return -1;
	}
	return 0;
}

int jget_positive(const json_t *v, const char *path, double *out,
		  struct mp_error *err)
{
	if (jget_finite(v, path, out, err) < 0)
		return -1;
	if (*out <= 0) {
		mp_error_set(err, "%s: must be positive, got %g", path, *out);
		return -1;
	}
	return 0;
}

int jget_range(const json_t *v, const char *path, double lo, double hi,
	       const char *unit, double *out, struct mp_error *err)
{
	if (jget_finite(v, path, out, err) < 0)
		return -1;
	if (*out < lo || *out > hi) {
		if (lo > 0 && *out <= 0)
			mp_error_set(err, "%s: must be positive, got %g %s", path, *out, unit);
		else if (lo == 0 && *out < 0)
			mp_error_set(err, "%s: must not be negative, got %g %s", path, *out, unit);
		else
			mp_error_set(err, "%s: must be between %g and %g %s, got %g", path, lo, hi, unit, *out);
		return -1;
	}
	return 0;
}

int jget_int(const json_t *v, const char *path, int64_t lo, int64_t hi,
	     int64_t *out, struct mp_error *err)
{
	if (!json_is_integer(v)) {
		mp_error_set(err, "%s: expected an integer, got %s", path, jget_type(v));
		return -1;
	}
	*out = json_integer_value(v);
	if (*out < lo || *out > hi) {
		mp_error_set(err, "%s: %lld is out of range [%lld, %lld]", path,
			     (long long)*out, (long long)lo, (long long)hi);
		return -1;
	}
	return 0;
}

int jget_bool(const json_t *v, const char *path, int *out, struct mp_error *err)
{
	if (!json_is_boolean(v)) {
		mp_error_set(err, "%s: expected true or false, got %s", path, jget_type(v));
		return -1;
	}
	*out = json_is_true(v);
	return 0;
}

/* Line and column (1-based) of byte off, for messages about raw bytes. */
static void line_col(const char *buf, size_t off, int *line, int *col)
{
	const char *nl;

	*line = 1;
	*col = 1;
	for (const char *p = buf; (nl = memchr(p, '\n', (size_t)(buf + off - p))); p = nl + 1) {
		(*line)++;
		*col = (int)(buf + off - nl);
	}
	if (*line == 1)
		*col = (int)off + 1;
}

/* Read a whole regular file: jansson's stream reader goes a byte at a time. */
static char *slurp(const char *path, size_t *len, struct mp_error *err)
{
	struct stat st;
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0, got;
	char *buf;

	if (!f) {
		mp_error_set(err, "cannot open: %s", strerror(errno));
		return NULL;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		mp_error_set(err, "is a directory, not a JSON file");
		fclose(f);
		return NULL;
	}
	buf = mp_xmalloc(cap);
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		/* fail at the first NUL byte or past the size cap, without reading
		 * the rest (/dev/zero, a disk image given by mistake) */
		const char *nul = memchr(buf + n, '\0', got);

		if (nul) {
			int line, col;

			line_col(buf, (size_t)(nul - buf), &line, &col);
			mp_error_set(err, "line %d, column %d: invalid JSON: unexpected NUL byte", line, col);
			fclose(f);
			free(buf);
			return NULL;
		}
		n += got;
		if (n > MP_MAX_JSON_BYTES) {
			mp_error_set(err, "larger than the %u MiB memplan reads", (unsigned)(MP_MAX_JSON_BYTES >> 20));
			fclose(f);
			free(buf);
			return NULL;
		}
		if (n == cap)
			buf = mp_xrealloc(buf, cap *= 2);
	}
	if (ferror(f)) {
		mp_error_set(err, "cannot read: %s", strerror(errno));
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	*len = n;
	return buf;
}

json_t *mp_json_load_buffer(const char *buf, size_t len, struct mp_error *err)
{
	json_error_t jerr;
	json_t *root;

	if (len == 0) {
		mp_error_set(err, "the file is empty (expected a JSON object)");
		return NULL;
	}
	if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) {
		mp_error_set(err, "line 1, column 1: invalid JSON: the file starts with a byte order mark (save it as UTF-8 without BOM)");
		return NULL;
	}
	/* JSON_ALLOW_NUL: a \u0000 escape reaches the typed readers, which name
	 * the field it is in */
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!root) {
		if (jerr.line <= 0)
			mp_error_set(err, "%s", jerr.text);
		else
			mp_error_set(err, "line %d, column %d: invalid JSON: %s", jerr.line, jerr.column, jerr.text);
	}
	return root;
}

json_t *mp_json_load_file(const char *path, struct mp_error *err)
{
	json_t *root;
	size_t len;
	char *buf = slurp(path, &len, err);

	if (!buf)
		return NULL;
	root = mp_json_load_buffer(buf, len, err);
	free(buf);
	return root;
}

static struct mp_arena *json_arena;

static void *json_arena_malloc(size_t n)
{
	return mp_arena_alloc_raw(json_arena, n);
}

static void json_arena_free(void *p)
{
	(void)p;
}

void mp_json_arena_begin(struct mp_json_arena *ja)
{
	MP_ASSERT(!json_arena);
	memset(&ja->arena, 0, sizeof(ja->arena));
	json_get_alloc_funcs(&ja->old_malloc, &ja->old_free);
	json_arena = &ja->arena;
	json_set_alloc_funcs(json_arena_malloc, json_arena_free);
}

void mp_json_arena_end(struct mp_json_arena *ja)
{
	MP_ASSERT(json_arena == &ja->arena);
	json_set_alloc_funcs(ja->old_malloc, ja->old_free);
	json_arena = NULL;
	mp_arena_release(&ja->arena); /* the whole tree, without walking it */
}
