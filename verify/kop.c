/*
 * kop: the real kernel behind an op (verify/kop.h).  The layer an op was
 * lowered from says which cuDNN or cuBLAS call sequence runs it: its type,
 * dtype, shapes and conv/pool geometry (memplan-net(5) "Geometry"); the
 * lowering's tensors (memplan-net(5) "Generated names": the layer's out,
 * dout, paramK and paramK.grad, mask, stats, workspace; its inputs' out and
 * dout) fill the roles.  The roles are what the kernel touches, decided from
 * the layer type alone, and are then compared with the op's reads and
 * writes: a "saves" override, a hand-edited op, anything else that reads or
 * writes otherwise, runs timed, because a real kernel would touch tensors
 * the schedule does not keep resident, or leave written ones unwritten.
 *
 * Decisions the header leaves open:
 * - In place: only activations and add run in place for real (cuDNN's
 *   activation forward allows y == x; add is elementwise).  Every other type
 *   in place runs timed: convolution, pooling, LRN, batch norm, softmax,
 *   dropout and concat kernels read neighbours or other rows of x after
 *   writing y, or are not documented to allow y == x.
 * - Backward roles list only the forward tensors the kernel reads: an
 *   activation's backward has y and dy, not x (relu, sigmoid and tanh
 *   derivatives are functions of y, and the CUDA side passes y for x; elu's
 *   is too, up to its values); an average pool's backward has only dy; add
 *   and concat backward only dy.  x[i] is -1 where not read, and n_x is the
 *   layer's input count in both phases.
 * - dy is -1 when the layer ends the forward pass (no layer reads its
 *   output, so the lowering gives it no gradient); the CUDA side then feeds
 *   the kernel a scratch dy of y's size.
 * - Gradient accumulation: dx_accumulate[i] when the op reads dx[i] (the op
 *   lists it among its inputs) or dx[i] is the same tensor as an earlier
 *   dx[j] of this op (an add or concat reading one layer twice).  The
 *   lowering of memplan-net(5) does not list the earlier value of a
 *   gradient that several layers' backward ops write as a read, so those
 *   ops overwrite (beta 0): the bytes and time are right, the gradient
 *   values are not a sum, which verify does not need.
 * - Shapes: conv, pool, LRN, batch norm and concat are NCHW from the shape
 *   ([N, C] gives nsp 0; more than 3 trailing dimensions fold into one);
 *   activation, softmax, dropout and add are flattened to [N, C] (nsp 0,
 *   C = elements / N); fc is a GEMM of n rows: rows of the input's last
 *   dimension when the weight is [K, C] with C that dimension and K the
 *   output's last, else each sample flattened (n = N).
 * - Batch norm runs for float32 only: cuDNN keeps its scale, bias and saved
 *   statistics in float32 for float16 and bfloat16 data, while the net
 *   gives the parameters the layer's dtype.
 *
 * O(inputs + outputs + the layer's tensors) per op, with a sort of at most
 * 2 KOP_MAX_IN + 8 ids.
 */
#include "kop.h"

#include <stdlib.h>
#include <string.h>

static const char *const kop_names[KOP__COUNT] = {
	"timed", "conv", "fc", "pool", "act", "lrn", "bn", "softmax", "dropout", "add", "concat",
};

const char *mp_kop_type_name(enum mp_kop_type t)
{
	return t < KOP__COUNT ? kop_names[t] : "?";
}

/* The kernel of each layer type, and why the others have none. */
static const struct {
	enum mp_kop_type kop;
	const char *why;
} by_layer[MP_L__COUNT] = {
	[MP_L_DATA] = { KOP_TIMED, "layer type data has no kernel (its input is produced before the iteration)" },
	[MP_L_CONV] = { KOP_CONV, NULL },
	[MP_L_FC] = { KOP_FC, NULL },
	[MP_L_RELU] = { KOP_ACT, NULL },
	[MP_L_SIGMOID] = { KOP_ACT, NULL },
	[MP_L_TANH] = { KOP_ACT, NULL },
	[MP_L_ELU] = { KOP_ACT, NULL },
	[MP_L_RELU6] = { KOP_ACT, NULL },
	[MP_L_RMSNORM] = { KOP_TIMED, "layer type rmsnorm has no cuDNN kernel" },
	[MP_L_ROPE] = { KOP_TIMED, "layer type rope has no cuDNN kernel" },
	[MP_L_MUL] = { KOP_TIMED, "layer type mul has no cuDNN kernel" },
	[MP_L_GELU] = { KOP_TIMED, "layer type gelu has no cuDNN kernel" },
	[MP_L_SILU] = { KOP_TIMED, "layer type silu has no cuDNN kernel" },
	[MP_L_POOL] = { KOP_POOL, NULL },
	[MP_L_LRN] = { KOP_LRN, NULL },
	[MP_L_BN] = { KOP_BN, NULL },
	[MP_L_LAYERNORM] = { KOP_TIMED, "layer type layernorm has no cuDNN kernel" },
	[MP_L_DROPOUT] = { KOP_DROPOUT, NULL },
	[MP_L_SOFTMAX] = { KOP_SOFTMAX, NULL },
	[MP_L_LOSS] = { KOP_TIMED, "layer type loss has no cuDNN kernel" },
	[MP_L_ADD] = { KOP_ADD, NULL },
	[MP_L_CONCAT] = { KOP_CONCAT, NULL },
	[MP_L_EMBEDDING] = { KOP_TIMED, "layer type embedding has no cuDNN kernel" },
	[MP_L_ATTENTION] = { KOP_TIMED, "layer type attention has no cuDNN kernel" },
	[MP_L_RESHAPE] = { KOP_TIMED, "layer type reshape has no kernel (a view)" },
	[MP_L_CUSTOM] = { KOP_TIMED, "layer type custom has no known kernel" },
	[MP_L_OP] = { KOP_TIMED, "an explicit op" },
};

static const char *const differ_why[KOP__COUNT] = {
	[KOP_CONV] = "reads or writes differ from the conv kernel's",
	[KOP_FC] = "reads or writes differ from the fc kernel's",
	[KOP_POOL] = "reads or writes differ from the pool kernel's",
	[KOP_ACT] = "reads or writes differ from the act kernel's",
	[KOP_LRN] = "reads or writes differ from the lrn kernel's",
	[KOP_BN] = "reads or writes differ from the bn kernel's",
	[KOP_SOFTMAX] = "reads or writes differ from the softmax kernel's",
	[KOP_DROPOUT] = "reads or writes differ from the dropout kernel's",
	[KOP_ADD] = "reads or writes differ from the add kernel's",
	[KOP_CONCAT] = "reads or writes differ from the concat kernel's",
};

#define DIM_MAX 2147483647u /* cuDNN and cuBLAS take int dimensions */

/* Everything absent: roles -1, no geometry. */
static void kop_clear(struct mp_kop *k, enum mp_phase phase, enum mp_dtype dtype)
{
	memset(k, 0, sizeof(*k));
	k->type = KOP_TIMED;
	k->phase = phase;
	k->dtype = dtype;
	for (uint32_t i = 0; i < KOP_MAX_IN; i++)
		k->x[i] = k->dx[i] = -1;
	k->w = k->b = k->y = k->dy = k->dw = k->db = k->stats = k->mask = k->ws = -1;
}

static void timed(struct mp_kop *k, const char *why)
{
	kop_clear(k, k->phase, k->dtype);
	k->why = why;
}

static uint64_t shape_elems(const struct mp_shape *s)
{
	uint64_t n = 1;

	for (unsigned i = 0; i < s->nd; i++)
		n *= s->d[i]; /* the loader caps elements at 2^50 */
	return n;
}

static bool shape_equal(const struct mp_shape *a, const struct mp_shape *b)
{
	return a->nd == b->nd && !memcmp(a->d, b->d, a->nd * sizeof(a->d[0]));
}

/* NCHW from a shape: N, C, up to 3 spatial dimensions (more fold into one).
 * false when a figure exceeds what cuDNN takes. */
static bool nchw(const struct mp_shape *s, uint32_t *n, uint32_t *c, uint8_t *nsp, uint32_t sp[3])
{
	uint64_t fold = 1;

	*n = s->d[0];
	*c = s->nd >= 2 ? s->d[1] : 1;
	*nsp = s->nd > 2 ? (uint8_t)(s->nd - 2) : 0;
	if (*nsp > 3) {
		for (unsigned i = 2; i < s->nd; i++)
			fold *= s->d[i];
		if (fold > DIM_MAX)
			return false;
		*nsp = 1;
		sp[0] = (uint32_t)fold;
	} else {
		for (unsigned i = 0; i < *nsp; i++)
			sp[i] = s->d[2 + i];
	}
	for (unsigned i = 0; i < *nsp; i++)
		if (sp[i] > DIM_MAX)
			return false;
	return *n <= DIM_MAX && *c <= DIM_MAX;
}

/* [N, C] with C = elements / N. */
static bool flat(const struct mp_shape *s, uint32_t *n, uint32_t *c)
{
	uint64_t e = shape_elems(s) / s->d[0];

	*n = s->d[0];
	*c = (uint32_t)e;
	return *n <= DIM_MAX && e <= DIM_MAX;
}

/* The layer's parameter tensors, in order (its forward op reads them). */
static uint32_t layer_params(const struct mp_net *net, int32_t l, int32_t *p, uint32_t cap)
{
	const struct mp_op *f = &net->ops[net->layers[l].fwd_op];
	uint32_t n = 0;

	for (uint32_t i = 0; i < f->n_in && n < cap; i++) {
		const struct mp_tensor *t = &net->tensors[f->in[i]];

		if (t->kind == MP_TK_PARAM && t->layer == l)
			p[n++] = f->in[i];
	}
	return n;
}

/* Their gradients, in the same order (the backward op writes them): .grad,
 * or under "grads": "keep" the new gradient L.accumulate adds into it (the
 * only gradient of layer l that l's own backward writes). */
static uint32_t layer_param_grads(const struct mp_net *net, const struct mp_op *op, int32_t l,
				  int32_t *g, uint32_t cap)
{
	enum mp_tensor_kind kind = net->grads_keep ? MP_TK_GRADIENT : MP_TK_PARAM_GRAD;
	uint32_t n = 0;

	for (uint32_t i = 0; i < op->n_out && n < cap; i++) {
		const struct mp_tensor *t = &net->tensors[op->out[i]];

		if (t->kind == kind && t->layer == l)
			g[n++] = op->out[i];
	}
	return n;
}

/* The parameters of conv and fc: a weight and optionally a bias of k
 * elements; NULL if they fit, else why not. */
static const char *weight_bias(const struct mp_layer *ly, uint32_t k, const char *why)
{
	if (ly->n_params < 1 || ly->n_params > 2)
		return why;
	if (ly->n_params == 2 && (!ly->params[1].nd || shape_elems(&ly->params[1]) != k))
		return why;
	return NULL;
}

/* Shapes and geometry into k; NULL, or why the op must run timed. */
static const char *kop_shapes(const struct mp_net *net, const struct mp_layer *ly, struct mp_kop *k)
{
	const struct mp_shape *y = &ly->shape, *x = &net->layers[ly->inputs[0]].shape;
	const struct mp_geom *g = &ly->geom;
	uint32_t n;
	uint8_t nsp;

	switch (k->type) {
	case KOP_CONV:
	case KOP_POOL:
		if (!g->nsp)
			return k->type == KOP_CONV ? "a conv layer without geometry (memplan-net(5) \"Geometry\")"
						   : "a pool layer without geometry (memplan-net(5) \"Geometry\")";
		if (!nchw(y, &k->n, &k->k, &k->nsp, k->out_sp) || !nchw(x, &n, &k->c, &nsp, k->in_sp))
			return "a dimension above 2^31 - 1";
		for (unsigned i = 0; i < g->nsp; i++) {
			k->kernel[i] = g->kernel[i];
			k->stride[i] = g->stride[i];
			k->pad[i] = g->pad[i];
			k->dilation[i] = g->dilation[i];
			if (k->type == KOP_POOL && g->dilation[i] != 1)
				return "cuDNN pooling has no dilation";
		}
		k->groups = g->groups;
		if (k->type == KOP_POOL) {
			k->mode = ly->pool_mode;
			return NULL;
		}
		return weight_bias(ly, k->k, "conv parameters are not a weight and an optional bias [K]");
	case KOP_FC: {
		const struct mp_shape *w = ly->n_params ? &ly->params[0] : NULL;
		uint64_t ex = shape_elems(x), ey = shape_elems(y), rows;

		if (!w || w->nd != 2)
			return "fc parameters are not a weight [K, C] and an optional bias [K]";
		k->k = w->d[0];
		k->c = w->d[1];
		if (x->d[x->nd - 1] == k->c && y->d[y->nd - 1] == k->k && ex / k->c == ey / k->k)
			rows = ex / k->c; /* rows of the last dimension */
		else if (x->d[0] == y->d[0] && ex / x->d[0] == k->c && ey / y->d[0] == k->k &&
			 ex % x->d[0] == 0)
			rows = x->d[0]; /* each sample flattened */
		else
			return "the fc weight [K, C] does not fit its input and output shapes";
		if (rows > DIM_MAX || k->c > DIM_MAX || k->k > DIM_MAX)
			return "a dimension above 2^31 - 1";
		k->n = (uint32_t)rows;
		return weight_bias(ly, k->k, "fc parameters are not a weight [K, C] and an optional bias [K]");
	}
	case KOP_ACT:
	case KOP_SOFTMAX:
	case KOP_DROPOUT:
		if (shape_elems(x) != shape_elems(y) || x->d[0] != y->d[0])
			return "the input and output sizes differ";
		if (k->type == KOP_ACT)
			k->mode = ly->type == MP_L_RELU ? KOP_ACT_RELU : ly->type == MP_L_SIGMOID ? KOP_ACT_SIGMOID :
				  ly->type == MP_L_TANH ? KOP_ACT_TANH : ly->type == MP_L_ELU ? KOP_ACT_ELU :
				  KOP_ACT_RELU6;
		if (!flat(y, &k->n, &k->c))
			return "a dimension above 2^31 - 1";
		k->k = k->c;
		return NULL;
	case KOP_LRN:
	case KOP_BN:
		if (!shape_equal(x, y) || y->nd < 2)
			return "the input and output shapes differ, or are not [N, C, ...]";
		if (!nchw(y, &k->n, &k->c, &k->nsp, k->out_sp))
			return "a dimension above 2^31 - 1";
		memcpy(k->in_sp, k->out_sp, sizeof(k->in_sp));
		k->k = k->c;
		if (k->type == KOP_LRN)
			return NULL;
		if (k->dtype != MP_DT_FLOAT32)
			return "cuDNN batch norm keeps float32 parameters; the layer's are 16-bit";
		if (ly->n_params != 2 || !ly->params[0].nd || !ly->params[1].nd ||
		    shape_elems(&ly->params[0]) != k->c || shape_elems(&ly->params[1]) != k->c)
			return "bn parameters are not a scale and a bias [C]";
		return NULL;
	case KOP_ADD:
		for (uint32_t i = 0; i < ly->n_inputs; i++)
			if (!shape_equal(&net->layers[ly->inputs[i]].shape, y))
				return "an add input's shape differs from the output's";
		if (!flat(y, &k->n, &k->c))
			return "a dimension above 2^31 - 1";
		k->k = k->c;
		return NULL;
	case KOP_CONCAT: {
		uint64_t sum = 0;

		if (y->nd < 2)
			return "a concat output is not [N, C, ...]";
		for (uint32_t i = 0; i < ly->n_inputs; i++) {
			const struct mp_shape *xi = &net->layers[ly->inputs[i]].shape;

			if (xi->nd != y->nd || xi->d[0] != y->d[0] ||
			    memcmp(xi->d + 2, y->d + 2, (y->nd - 2) * sizeof(y->d[0])))
				return "a concat input differs from the output in more than its channels";
			k->x_c[i] = xi->d[1];
			sum += xi->d[1];
		}
		if (sum != y->d[1])
			return "the concat inputs' channels do not add up to the output's";
		if (!nchw(y, &k->n, &k->k, &k->nsp, k->out_sp))
			return "a dimension above 2^31 - 1";
		memcpy(k->in_sp, k->out_sp, sizeof(k->in_sp));
		k->c = k->k;
		return NULL;
	}
	default:
		return "no kernel"; /* not reached: by_layer maps the rest to KOP_TIMED */
	}
}

/* Roles from the lowering: what the kernel of k->type touches in k->phase. */
static void kop_roles(const struct mp_net *net, const struct mp_layer *ly, const struct mp_op *op,
		      struct mp_kop *k)
{
	bool fwd = op->phase == MP_PHASE_FWD;
	int32_t p[2] = { -1, -1 }, g[2] = { -1, -1 };
	bool reads_x = fwd, reads_y = false, reads_params = fwd;

	k->n_x = ly->n_inputs;
	k->ws = op->ws;
	layer_params(net, op->layer, p, 2);
	if (!fwd) {
		layer_param_grads(net, op, op->layer, g, 2);
		switch (k->type) {
		case KOP_CONV: case KOP_FC: reads_x = reads_params = true; break;
		case KOP_POOL: reads_x = reads_y = k->mode == 0; break;
		case KOP_ACT: case KOP_SOFTMAX: reads_y = true; break;
		case KOP_LRN: reads_x = reads_y = true; break;
		case KOP_BN: reads_x = reads_params = true; break;
		default: break; /* dropout: the mask; add, concat: dy only */
		}
		k->dy = ly->dout;
		for (uint32_t i = 0; i < ly->n_inputs; i++)
			k->dx[i] = net->layers[ly->inputs[i]].dout;
		if (k->type == KOP_CONV || k->type == KOP_FC || k->type == KOP_BN) {
			k->dw = g[0];
			k->db = g[1];
		}
		if (k->type == KOP_BN)
			k->stats = ly->stats;
		if (k->type == KOP_DROPOUT)
			k->mask = ly->mask;
	} else {
		if (k->type == KOP_BN)
			k->stats = ly->stats;
		if (k->type == KOP_DROPOUT)
			k->mask = ly->mask;
	}
	if (reads_x)
		for (uint32_t i = 0; i < ly->n_inputs; i++)
			k->x[i] = net->layers[ly->inputs[i]].out;
	if (fwd || reads_y)
		k->y = ly->out;
	if (reads_params && (k->type == KOP_CONV || k->type == KOP_FC || k->type == KOP_BN)) {
		k->w = p[0];
		/* conv and fc backward need the weight only (the lowering reads the
		 * first parameter); batch norm's reads both */
		k->b = fwd || k->type == KOP_BN ? p[1] : -1;
	}
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/* Sort and drop duplicates and -1; returns the new length. */
static uint32_t id_set(int32_t *v, uint32_t n)
{
	uint32_t m = 0;

	qsort(v, n, sizeof(*v), cmp_i32);
	for (uint32_t i = 0; i < n; i++)
		if (v[i] >= 0 && (m == 0 || v[m - 1] != v[i]))
			v[m++] = v[i];
	return m;
}

#define ROLE_CAP (2 * KOP_MAX_IN + 8)

/* Whether the ids in list[n] are exactly the set in set[m] (sorted, unique). */
static bool same_set(const int32_t *list, uint32_t n, const int32_t *set, uint32_t m)
{
	int32_t v[ROLE_CAP];

	if (n != m) /* an op's lists hold distinct ids */
		return false;
	memcpy(v, list, n * sizeof(*v));
	return id_set(v, n) == m && !memcmp(v, set, m * sizeof(*v));
}

static bool op_reads(const struct mp_op *op, int32_t t)
{
	for (uint32_t i = 0; i < op->n_in; i++)
		if (op->in[i] == t)
			return true;
	return false;
}

/* The roles against the op: reads exactly its inputs, writes exactly its
 * outputs (the workspace is neither).  Sets dx_accumulate. */
static bool roles_match(const struct mp_op *op, struct mp_kop *k)
{
	int32_t r[ROLE_CAP], w[ROLE_CAP];
	uint32_t nr = 0, nw = 0;
	bool fwd = op->phase == MP_PHASE_FWD;

	for (uint32_t i = 0; i < k->n_x; i++)
		r[nr++] = k->x[i];
	r[nr++] = k->w;
	r[nr++] = k->b;
	if (fwd) {
		w[nw++] = k->y;
		w[nw++] = k->stats;
		w[nw++] = k->mask;
	} else {
		r[nr++] = k->y;
		r[nr++] = k->stats;
		r[nr++] = k->mask;
		r[nr++] = k->dy;
		w[nw++] = k->dw;
		w[nw++] = k->db;
		for (uint32_t i = 0; i < k->n_x; i++) {
			if (k->dx[i] < 0)
				continue;
			w[nw++] = k->dx[i];
			if (op_reads(op, k->dx[i])) {
				r[nr++] = k->dx[i];
				k->dx_accumulate[i] = true;
			}
			for (uint32_t j = 0; j < i; j++)
				if (k->dx[j] == k->dx[i])
					k->dx_accumulate[i] = true;
		}
	}
	nr = id_set(r, nr);
	nw = id_set(w, nw);
	return same_set(op->in, op->n_in, r, nr) && same_set(op->out, op->n_out, w, nw);
}

/* The kernel and roles of op o into k; NULL, or why it runs timed. */
static const char *kop_decide(const struct mp_net *net, int32_t o, struct mp_kop *k)
{
	const struct mp_op *op = &net->ops[o];
	const struct mp_layer *ly;
	const char *why;

	if (op->layer < 0)
		return "an explicit op";
	ly = &net->layers[op->layer];
	k->dtype = ly->dtype;
	if (op->phase == MP_PHASE_OPT)
		return "an optimizer update";
	if (op->phase == MP_PHASE_BWD && op->type != ly->type)
		return "a gradient accumulation (\"grads\": \"keep\")"; /* L.accumulate */
	k->type = by_layer[ly->type].kop;
	if (k->type == KOP_TIMED)
		return by_layer[ly->type].why;
	if (ly->quant)
		return "a 4-bit weight (\"quant\"), which no kernel dequantizes";
	if (ly->dtype != MP_DT_FLOAT32 && ly->dtype != MP_DT_FLOAT16 && ly->dtype != MP_DT_BFLOAT16)
		return "dtype other than float32, float16 or bfloat16";
	if (ly->n_inputs > KOP_MAX_IN)
		return "more inputs than KOP_MAX_IN (64)";
	if (ly->n_inputs != 1 && k->type != KOP_ADD && k->type != KOP_CONCAT)
		return "the layer reads more than one input";
	if (!ly->shape.nd)
		return "the layer's output has no shape (given as bytes)";
	for (uint32_t i = 0; i < ly->n_inputs; i++) {
		const struct mp_layer *in = &net->layers[ly->inputs[i]];

		if (!in->shape.nd)
			return "an input has no shape (given as bytes)";
		if (net->tensors[in->out].dtype != ly->dtype)
			return "an input's dtype differs from the layer's";
	}
	if (ly->inplace && k->type != KOP_ACT && k->type != KOP_ADD)
		return "in place, which only the act and add kernels run";
	if ((why = kop_shapes(net, ly, k)))
		return why;
	kop_roles(net, ly, op, k);
	if (!roles_match(op, k))
		return differ_why[k->type];
	return NULL;
}

void kop_build(const struct mp_net *net, int32_t o, struct mp_kop *k)
{
	const char *why;

	kop_clear(k, net->ops[o].phase, net->dtype);
	if ((why = kop_decide(net, o, k)))
		timed(k, why);
}
