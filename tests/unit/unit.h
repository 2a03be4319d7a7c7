/*
 * A minimal unit-test harness: CHECK macros count failures and name the
 * file:line; each test binary prints "N passed, N failed" and exits non-zero
 * on any failure.
 */
#ifndef MP_UNIT_H
#define MP_UNIT_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int unit_pass, unit_fail;

#define CHECK(c) do { \
	if (c) unit_pass++; \
	else { unit_fail++; fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c); } \
} while (0)

#define CHECK_U64(a, b) do { \
	uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b); \
	if (a_ == b_) unit_pass++; \
	else { unit_fail++; fprintf(stderr, "%s:%d: %s == %" PRIu64 ", expected %s == %" PRIu64 "\n", \
				    __FILE__, __LINE__, #a, a_, #b, b_); } \
} while (0)

#define CHECK_NEAR(a, b, eps) do { \
	double a_ = (a), b_ = (b); \
	if (a_ - b_ <= (eps) && b_ - a_ <= (eps)) unit_pass++; \
	else { unit_fail++; fprintf(stderr, "%s:%d: %s == %.9g, expected %.9g\n", \
				    __FILE__, __LINE__, #a, a_, b_); } \
} while (0)

#define CHECK_STR(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	if (a_ && b_ && !strcmp(a_, b_)) unit_pass++; \
	else { unit_fail++; fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", \
				    __FILE__, __LINE__, #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } \
} while (0)

/* xorshift64 (Marsaglia 2003): reproducible random numbers in [0, n) for
 * generated cases, from the caller's nonzero state. */
static inline uint32_t unit_rnd(uint64_t *s, uint32_t n)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)(*s % n);
}

static inline int unit_report(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, unit_pass, unit_fail);
	return unit_fail ? 1 : 0;
}

#endif
