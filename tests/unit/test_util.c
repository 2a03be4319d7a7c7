/* Unit tests: size parsing and formatting, checked arithmetic, string map. */
#include "../../analysis/base/util.h"
#include "unit.h"

static uint64_t size_of(const char *s)
{
	struct mp_error err;
	uint64_t v = 0;

	return mp_parse_size(s, &v, &err) == 0 ? v : UINT64_MAX;
}

int main(void)
{
	struct mp_error err;
	struct mp_strmap m;
	char buf[32];
	uint64_t v;

	CHECK_U64(size_of("0"), 0);
	CHECK_U64(size_of("512"), 512);
	CHECK_U64(size_of("512B"), 512);
	CHECK_U64(size_of("1K"), 1024);
	CHECK_U64(size_of("512M"), 512ull << 20);
	CHECK_U64(size_of("11G"), 11ull << 30);
	CHECK_U64(size_of("11GiB"), 11ull << 30);
	CHECK_U64(size_of("11gb"), 11ull << 30);
	CHECK_U64(size_of("1.5GiB"), 3ull << 29);
	CHECK_U64(size_of("1.5T"), 3ull << 39);
	CHECK_U64(size_of(" 24 M "), 24ull << 20);
	CHECK_U64(size_of("1P"), 1ull << 50);
	CHECK_U64(size_of("2P"), UINT64_MAX);   /* over 1 PiB */
	CHECK_U64(size_of("-1"), UINT64_MAX);
	CHECK_U64(size_of("12X"), UINT64_MAX);
	CHECK_U64(size_of("G"), UINT64_MAX);
	CHECK_U64(size_of(""), UINT64_MAX);
	CHECK_U64(size_of("1..5G"), UINT64_MAX);
	CHECK_U64(size_of("1e3"), UINT64_MAX);
	CHECK(mp_parse_size("12X", &v, &err) < 0);
	CHECK_STR(err.msg, "'12X': unknown unit 'x' (use B, K, M, G, T or P; all powers of 1024)");

	/* control characters: C0, DEL and UTF-8 encoded C1, not other UTF-8 */
	CHECK(mp_find_control("conv1.out") == -1);
	CHECK(mp_find_control("") == -1);
	CHECK(mp_find_control("a\nb") == 1);
	CHECK(mp_find_control("\tx") == 0);
	CHECK(mp_find_control("ab\x7f") == 2);
	CHECK(mp_find_control("x\xc2\x9b[31m") == 1);    /* U+009B, CSI */
	CHECK(mp_find_control("\xc2\xb5s") == -1);       /* U+00B5, micro sign */
	CHECK(mp_find_control("\xc3\xa9\x1b") == 2);     /* e-acute, then ESC */
	CHECK_STR(mp_fmt_bytes(0, buf, sizeof(buf)), "0 B");
	CHECK_STR(mp_fmt_bytes(1023, buf, sizeof(buf)), "1023 B");
	CHECK_STR(mp_fmt_bytes(1024, buf, sizeof(buf)), "1.0 KiB");
	CHECK_STR(mp_fmt_bytes(929438720ull, buf, sizeof(buf)), "886.4 MiB");
	CHECK_STR(mp_fmt_bytes(12ull << 30, buf, sizeof(buf)), "12.0 GiB");

	CHECK(mp_add_u64(UINT64_MAX, 1, &v) < 0);
	CHECK(mp_add_u64(1, 2, &v) == 0 && v == 3);
	CHECK(mp_mul_u64(1ull << 40, 1ull << 30, &v) < 0);

	/* FNV-1a: no words is the offset basis; the word 0 folds as the byte
	 * 0 does (the published 64-bit vector for "\0"); three words by hand
	 * (h = (h ^ w) * prime mod 2^64, in Python) */
	{
		const uint64_t w[3] = { 0, 1, UINT64_MAX };

		CHECK_U64(mp_fnv_words(MP_FNV_OFFSET, w, 0), UINT64_C(0xcbf29ce484222325));
		CHECK_U64(mp_fnv_words(MP_FNV_OFFSET, w, 1), UINT64_C(0xaf63bd4c8601b7df));
		CHECK_U64(mp_fnv_words(MP_FNV_OFFSET, w, 3), UINT64_C(0x26b652e793f3b1bf));
		CHECK_U64(mp_fnv_words(mp_fnv_words(MP_FNV_OFFSET, w, 1), w + 1, 2), UINT64_C(0x26b652e793f3b1bf));
	}

	mp_error_set(&err, "no layer named '%s'", "conv9");
	mp_error_prefix(&err, "layers[%d].inputs[%d]: ", 3, 0);
	CHECK_STR(err.msg, "layers[3].inputs[0]: no layer named 'conv9'");

	mp_strmap_init(&m);
	CHECK(mp_strmap_put(&m, "a", 1) == -1);
	CHECK(mp_strmap_put(&m, "b", 2) == -1);
	CHECK(mp_strmap_put(&m, "a", 9) == 1);
	for (int i = 0; i < 1000; i++) {
		static char keys[1000][8];

		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		mp_strmap_put(&m, keys[i], i);
	}
	CHECK(mp_strmap_get(&m, "k999") == 999);
	CHECK(mp_strmap_get(&m, "b") == 2);
	CHECK(mp_strmap_get(&m, "zz") == -1);
	mp_strmap_release(&m);
	return unit_report("test_util");
}
