/*
 * Geometry of conv and pool layers (memplan-net(5) "Geometry"): checked
 * against the shapes when the file gives it, inferred from them when not;
 * and the sizes an add or a concat layer fixes.  O(spatial dimensions) per
 * conv or pool layer, O(inputs) per add or concat.
 */
#include <stdio.h>
#include <string.h>

#include "../base/jget.h"
#include "loader.h"

/* One spatial output size: floor((in + 2 pad - dilation (kernel - 1) - 1) /
 * stride) + 1, or -1 when the window is wider than the padded input.  Every
 * argument is below 2^33 (dimensions are uint32, geometry values int32), so
 * the arithmetic fits int64. */
static int64_t geo_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d)
{
	int64_t num = in + 2 * p - d * (k - 1) - 1;

	return num < 0 ? -1 : num / s + 1;
}

/* The smallest pad in [0, k - 1] giving out (dilation 1), in closed form: the
 * output grows with the pad, so the first pad reaching out is the only
 * candidate.  false when none. */
static bool pad_for(int64_t in, int64_t out, int64_t k, int64_t s, uint32_t *pad)
{
	int64_t lo = (out - 1) * s + k - in, p = lo <= 0 ? 0 : (lo + 1) / 2;

	if (p > k - 1 || geo_out(in, k, s, p, 1) != out)
		return false;
	*pad = (uint32_t)p;
	return true;
}

/* Pool window for stride s: kernel s or s + 1 with pad 0 covering the input
 * exactly ((in - kernel) divisible by s, no row left over), then kernel s or
 * s + 1 with the smallest pad that gives out. */
static bool pool_fit(int64_t in, int64_t out, int64_t s, uint32_t *k, uint32_t *pad)
{
	for (int64_t kk = s; kk <= s + 1; kk++)
		if (kk <= INT32_MAX && geo_out(in, kk, s, 0, 1) == out && (in - kk) % s == 0) {
			*k = (uint32_t)kk;
			*pad = 0;
			return true;
		}
	for (int64_t kk = s; kk <= s + 1; kk++)
		if (kk <= INT32_MAX && pad_for(in, out, kk, s, pad)) {
			*k = (uint32_t)kk;
			return true;
		}
	return false;
}

/*
 * Geometry of a conv or pool layer that gives no geometry keys, from its
 * shapes (memplan-net(5) "Geometry"); the geometry's nsp stays 0 when the shapes
 * do not fit the rule.  Never an error: analysis does not need geometry.
 * O(spatial dimensions).
 */
static void geometry_infer(struct loader *L, uint32_t idx)
{
	const struct lspec *s = &L->ls[idx];
	struct mp_layer *ly = &L->net->layers[idx];
	const struct mp_shape *o = &ly->shape, *x, *w = NULL;
	struct mp_geom g = { 0 };
	uint32_t nsp;

	if (s->n_inputs != 1 || o->nd < 3 || o->nd > 5)
		return;
	x = &L->net->layers[s->inputs[0]].shape;
	if (x->nd != o->nd || x->d[0] != o->d[0])
		return;
	nsp = o->nd - 2u;
	if (s->type == MP_L_CONV) {
		if (!s->n_params)
			return;
		w = &ly->params[0];
		if (w->nd != o->nd || w->d[0] != o->d[1] || x->d[1] % w->d[1])
			return;
		g.groups = x->d[1] / w->d[1];
		if (o->d[1] % g.groups)
			return;
	} else {
		if (x->d[1] != o->d[1])
			return;
		g.groups = 1;
	}
	for (uint32_t i = 0; i < nsp; i++) {
		int64_t in = x->d[2 + i], out = o->d[2 + i], s0 = (in + out / 2) / out;
		bool found = false;

		if (s0 < 1)
			s0 = 1;
		g.dilation[i] = 1;
		/* the rounded ratio, then one less and one more */
		for (int t = 0; t < 3 && !found; t++) {
			int64_t st = t == 0 ? s0 : t == 1 ? s0 - 1 : s0 + 1;

			if (st < 1 || st > INT32_MAX)
				continue;
			if (s->type == MP_L_CONV) {
				g.kernel[i] = w->d[2 + i];
				found = g.kernel[i] <= INT32_MAX &&
					pad_for(in, out, g.kernel[i], st, &g.pad[i]);
			} else {
				found = pool_fit(in, out, st, &g.kernel[i], &g.pad[i]);
			}
			g.stride[i] = (uint32_t)st;
		}
		if (!found)
			return;
	}
	g.nsp = (uint8_t)nsp;
	ly->geom = g;
}

static void fmt_dims(char *buf, size_t n, const uint32_t *d, unsigned nd)
{
	size_t used = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < nd && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%u", i ? ", " : "", d[i]);
}

/* Why a shape is unknown, for "geometry needs shapes" messages. */
static const char *no_shape_why(const struct lspec *s)
{
	return s->has_shape ? "has a dimension above 4294967295" : "has \"bytes\", not a \"shape\"";
}

/*
 * Geometry of a conv or pool layer that gives geometry keys: missing keys
 * take their defaults (kernel: the weight's; stride 1, for pool the kernel;
 * pad 0; dilation 1; groups 1), then everything is checked against the
 * shapes.  -1 with the JSON path of what disagrees.  O(spatial dimensions).
 */
static int geometry_given(struct loader *L, uint32_t idx)
{
	const struct lspec *s = &L->ls[idx];
	struct mp_layer *ly = &L->net->layers[idx];
	const struct mp_geom *raw = &ly->geom; /* the keys' values, as parsed */
	const struct mp_shape *o = &ly->shape, *x, *w = NULL;
	struct mp_geom g = { 0 };
	char path[64], p[256], a[128], b[128];
	const char *in_name;
	uint32_t nsp, c, k;
	int first = 0;


	jget_index(path, sizeof(path), "layers", idx);
	while (!(s->geo_given & (1u << first)))
		first++;
	jget_path(p, sizeof(p), path, geo_keys[first]);
	if (!o->nd) {
		mp_error_set(L->err, "%s: geometry needs shapes: '%s' %s", p, s->name, no_shape_why(s));
		return -1;
	}
	if (s->n_inputs != 1) {
		mp_error_set(L->err, "%s: geometry needs exactly one input; '%s' reads %u", p, s->name, s->n_inputs);
		return -1;
	}
	x = &L->net->layers[s->inputs[0]].shape;
	in_name = L->ls[s->inputs[0]].name;
	if (!x->nd) {
		mp_error_set(L->err, "%s: geometry needs shapes: the input '%s' %s", p, in_name,
			     no_shape_why(&L->ls[s->inputs[0]]));
		return -1;
	}
	if (o->nd < 3 || o->nd > 5) {
		mp_error_set(L->err, "%s: geometry needs a shape [N, C, spatial...] with 1 to 3 spatial dimensions; '%s' has %u dimensions",
			     p, s->name, o->nd);
		return -1;
	}
	if (x->nd != o->nd) {
		mp_error_set(L->err, "%s: geometry needs the input's shape to have as many dimensions: '%s' has %u, its input '%s' %u",
			     p, s->name, o->nd, in_name, x->nd);
		return -1;
	}
	nsp = o->nd - 2u;
	for (int gk = 0; gk < GK_GROUPS; gk++)
		if (s->geo_n[gk] && s->geo_n[gk] != nsp) {
			mp_error_set(L->err, "%s.%s: expected %u values, one per spatial dimension of [N, C, ...], got %u",
				     path, geo_keys[gk], nsp, s->geo_n[gk]);
			return -1;
		}
	if (o->d[0] != x->d[0]) {
		mp_error_set(L->err, "%s.shape[0]: batch %u differs from the input '%s' batch %u",
			     path, o->d[0], in_name, x->d[0]);
		return -1;
	}
	c = x->d[1];
	k = o->d[1];
	g.groups = s->geo_given & (1u << GK_GROUPS) ? raw->groups : 1;
	if (s->type == MP_L_CONV) {
		uint32_t want[MP_MAX_DIMS];

		if (!s->n_params) {
			mp_error_set(L->err, "%s: geometry needs the conv's weight in \"params\"", p);
			return -1;
		}
		w = &ly->params[0];
		if (!w->nd) {
			mp_error_set(L->err, "%s: geometry needs shapes: the weight is given as \"param_bytes\"", p);
			return -1;
		}
		if (c % g.groups || k % g.groups) {
			mp_error_set(L->err, "%s.groups: %u does not divide the %s's %u channels", path, g.groups,
				     c % g.groups ? "input" : "output", c % g.groups ? c : k);
			return -1;
		}
		if (w->nd != o->nd) {
			fmt_dims(a, sizeof(a), w->d, w->nd);
			mp_error_set(L->err, "%s.params[0]: the weight [%s] has %u dimensions, not the %u of [K, C/groups, kernel...]",
				     path, a, w->nd, o->nd);
			return -1;
		}
		want[0] = k;
		want[1] = c / g.groups;
		for (uint32_t i = 0; i < nsp; i++)
			want[2 + i] = s->geo_given & (1u << GK_KERNEL) ? raw->kernel[i] : w->d[2 + i];
		if (memcmp(w->d, want, o->nd * sizeof(*want))) {
			fmt_dims(a, sizeof(a), w->d, w->nd);
			fmt_dims(b, sizeof(b), want, o->nd);
			mp_error_set(L->err, "%s.params[0]: the weight [%s] is not [K, C/groups, kernel...] = [%s]",
				     path, a, b);
			return -1;
		}
		for (uint32_t i = 0; i < nsp; i++) {
			g.kernel[i] = want[2 + i];
			if (g.kernel[i] > INT32_MAX) {
				mp_error_set(L->err, "%s.params[0][%u]: a kernel of %u is larger than %d", path, 2 + i,
					     g.kernel[i], INT32_MAX);
				return -1;
			}
		}
	} else {
		if (!(s->geo_given & (1u << GK_KERNEL))) {
			mp_error_set(L->err, "%s: a pool layer's geometry needs \"kernel\"", p);
			return -1;
		}
		if (k != c) {
			mp_error_set(L->err, "%s.shape[1]: a pool layer keeps its input's channels: %u, its input '%s' has %u",
				     path, k, in_name, c);
			return -1;
		}
		for (uint32_t i = 0; i < nsp; i++)
			g.kernel[i] = raw->kernel[i];
	}
	for (uint32_t i = 0; i < nsp; i++) {
		int64_t got;

		g.stride[i] = s->geo_given & (1u << GK_STRIDE) ? raw->stride[i] :
			      s->type == MP_L_POOL ? g.kernel[i] : 1;
		g.pad[i] = s->geo_given & (1u << GK_PAD) ? raw->pad[i] : 0;
		g.dilation[i] = s->geo_given & (1u << GK_DILATION) ? raw->dilation[i] : 1;
		got = geo_out(x->d[2 + i], g.kernel[i], g.stride[i], g.pad[i], g.dilation[i]);
		if (got < 0) {
			mp_error_set(L->err, "%s.shape[%u]: the window, %u*(%u - 1) + 1 = %llu wide, is wider than the input '%s' with its padding, %u + 2*%u = %llu",
				     path, 2 + i, g.dilation[i], g.kernel[i],
				     (unsigned long long)g.dilation[i] * (g.kernel[i] - 1) + 1, in_name, x->d[2 + i], g.pad[i],
				     (unsigned long long)x->d[2 + i] + 2ull * g.pad[i]);
			return -1;
		}
		if (got != o->d[2 + i]) {
			mp_error_set(L->err, "%s.shape[%u]: expected floor((%u + 2*%u - %u*(%u - 1) - 1) / %u) + 1 = %lld from the input '%s' and the geometry, got %u",
				     path, 2 + i, x->d[2 + i], g.pad[i], g.dilation[i], g.kernel[i], g.stride[i],
				     (long long)got, in_name, o->d[2 + i]);
			return -1;
		}
	}
	g.nsp = (uint8_t)nsp;
	g.given = true;
	ly->geom = g;
	return 0;
}

int layer_geometry(struct loader *L, uint32_t idx)
{
	const struct lspec *s = &L->ls[idx];

	if (s->type != MP_L_CONV && s->type != MP_L_POOL)
		return 0;
	if (s->geo_given)
		return geometry_given(L, idx);
	geometry_infer(L, idx);
	return 0;
}

/* Does an input of shape a broadcast to b (NumPy rules: trailing dimensions
 * equal, or 1 in a)? */
static bool broadcasts(const struct mp_shape *a, const struct mp_shape *b)
{
	if (a->nd > b->nd)
		return false;
	for (unsigned k = 1; k <= a->nd; k++)
		if (a->d[a->nd - k] != 1 && a->d[a->nd - k] != b->d[b->nd - k])
			return false;
	return true;
}

/* Do every input of a concat and its output have a shape, with one batch
 * (first dimension)?  Then an output smaller than its inputs is a concat of
 * crops or slices of each sample that the shapes state (U-Net's copy and
 * crop, one state out of an RNN step's packed ones); without shapes nothing
 * says so. */
static bool concat_shaped(const struct loader *L, uint32_t idx)
{
	const struct lspec *s = &L->ls[idx];
	const struct mp_shape *o = &L->net->layers[idx].shape;

	if (!o->nd)
		return false;
	for (uint32_t k = 0; k < s->n_inputs; k++) {
		const struct mp_shape *in = &L->net->layers[s->inputs[k]].shape;

		if (!in->nd || in->d[0] != o->d[0])
			return false;
	}
	return true;
}

/* Sizes that an add or a concat layer fixes: every input of an add is the
 * output's size (or broadcasts to its shape); a concat's output holds its
 * inputs, no more and no less, or crops of them (concat_shaped).  In bytes
 * where every dtype is the output's (a size given in bytes need not be a
 * whole number of elements), else in elements. */
int check_sizes(struct loader *L, uint32_t idx)
{
	const struct lspec *s = &L->ls[idx];
	const struct mp_layer *ly = &L->net->layers[idx];
	bool bytes = true;
	uint64_t sum = 0, out;
	const char *unit;

	if (s->type != MP_L_ADD && s->type != MP_L_MUL && s->type != MP_L_CONCAT)
		return 0;
	for (uint32_t k = 0; k < s->n_inputs; k++)
		if (L->ls[s->inputs[k]].dtype != s->dtype)
			bytes = false;
	out = bytes ? s->out_bytes : s->elems;
	unit = bytes ? "bytes" : "elements";
	for (uint32_t k = 0; k < s->n_inputs; k++) {
		const struct lspec *in = &L->ls[s->inputs[k]];
		const struct mp_layer *il = &L->net->layers[s->inputs[k]];
		uint64_t size = bytes ? in->out_bytes : in->elems;

		if (mp_add_u64(sum, size, &sum) < 0) {
			mp_error_set(L->err, "layers[%u]: the inputs of '%s' hold more than 2^64 %s", idx, s->name, unit);
			return -1;
		}
		if (s->type == MP_L_CONCAT || size == out)
			continue;
		if (il->shape.nd && ly->shape.nd && broadcasts(&il->shape, &ly->shape))
			continue;
		mp_error_set(L->err, "layers[%u].inputs[%u]: '%s' has %llu %s, but the %s '%s' makes %llu%s",
			     idx, k, in->name, (unsigned long long)size, unit, mp_layer_type_name(s->type), s->name,
			     (unsigned long long)out,
			     il->shape.nd && ly->shape.nd ? " and its shape does not broadcast to the output's"
							  : " (give both shapes for a broadcasting add)");
		return -1;
	}
	if (s->type != MP_L_CONCAT || sum == out)
		return 0;
	if (sum > out && concat_shaped(L, idx))
		return 0;
	mp_error_set(L->err, "layers[%u]: the concat '%s' makes %llu %s, but its inputs hold %llu%s",
		     idx, s->name, (unsigned long long)out, unit, (unsigned long long)sum,
		     sum < out ? "" : " (for a concat of crops or slices, give the shapes of the output and of every input, with one batch)");
	return -1;
}
