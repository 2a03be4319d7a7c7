/*
 * build (internal to analysis/zoo/): what a model's build function writes
 * with.  struct zb is the net being generated: its layer list, the roofline
 * device, the name prefix of the part being built, the first error.
 * layers.c owns it and the layer vocabulary: each call appends one
 * memplan-net/1 layer (shape, parameters, roofline times) and returns its
 * output, for the next call to read.  The build functions, one per model,
 * live by family in cnn.c, transformer.c and rnn.c; zoo.c's table of models
 * names them.  Nothing here prints; a failure while building sets b->failed
 * once, with the first message in *b->err.
 */
#ifndef MP_ZOO_BUILD_H
#define MP_ZOO_BUILD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zoo.h"

#define NAME_MAX_LEN 96

/* A layer's output as the builder tracks it. */
struct zt {
	char name[NAME_MAX_LEN];
	unsigned nd;
	uint64_t d[5];
	unsigned esz;            /* bytes per element */
};

/* The builder: the layer array, the roofline device, the name prefix; and
 * what the build function hands zoo_generate besides the layers. */
struct zb {
	json_t *layers;
	enum mp_dtype dt;
	unsigned esz;
	double tflops;           /* peak of dt, TFLOP/s */
	double tflops_f32;       /* FFT convolutions compute in float32 */
	double mem_gbps;
	unsigned upd_passes;     /* optimizer: bytes moved per parameter byte */
	char prefix[NAME_MAX_LEN];
	size_t prefix_len;
	bool failed;
	struct mp_error *err;
	double io_bytes;         /* the layer being built: bytes moved forward */
	uint64_t param_bytes;
	const char *model;       /* the model's name, for messages */
	char name[64];           /* the net's "name" */
	char desc[1024];         /* its "description" (zoo_generate adds how
				  * the times were estimated) */
	json_t *gen;             /* its "generator", borrowed: the build function
				  * adds what only its model has */
};

struct convp {
	unsigned cout, kh, kw, sh, sw, ph, pw, groups;
	bool bias;
};

/* ---- the builder (layers.c) ------------------------------------------- */

/* Record the first failure (later ones are dropped). */
void zb_fail(struct zb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append ".part" to the name prefix; returns the length to give zb_pop. */
size_t zb_push(struct zb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void zb_pop(struct zb *b, size_t len);
/* A zeroed t of nd dimensions a, c, d, e (those past nd ignored). */
void zt_dims(struct zt *t, unsigned nd, uint64_t a, uint64_t c, uint64_t d, uint64_t e);
uint64_t zt_elems(const struct zt *t); /* UINT64_MAX on overflow */
double zt_bytes(const struct zt *t);
json_t *dims_json(unsigned nd, const uint64_t *d); /* a new reference */
/* Start a layer of type writing out from in[n_in]; borrowed, to add keys. */
json_t *emit(struct zb *b, struct zt *out, const char *suffix, const char *type,
	     unsigned n_in, const struct zt *const *in);
/* Append a parameter shape of nd dimensions to layer l. */
void add_param4(struct zb *b, json_t *l, unsigned nd, uint64_t a, uint64_t c,
		uint64_t d, uint64_t e);
/* Set l's roofline times for flops; the forward and backward in *fwd, *bwd
 * when not NULL. */
void finish(struct zb *b, json_t *l, double flops, double *fwd, double *bwd);

/* ---- layers (layers.c): each appends one layer named prefix.suffix ---- */

struct zt data(struct zb *b, const char *suffix, unsigned nd, uint64_t d0, uint64_t d1,
	       uint64_t d2, uint64_t d3, enum mp_dtype dt);
struct zt conv(struct zb *b, const struct zt *x, const struct convp *p, const char *suffix);
struct zt conv2d(struct zb *b, const struct zt *x, unsigned cout, unsigned k,
		 unsigned s, unsigned p, bool bias, const char *suffix);
struct zt upconv(struct zb *b, const struct zt *x, unsigned cout, const char *suffix);
struct zt bn(struct zb *b, const struct zt *x, const char *suffix);
struct zt act(struct zb *b, const struct zt *x, const char *type, bool inplace,
	      const char *suffix);
struct zt relu(struct zb *b, const struct zt *x, const char *suffix);
struct zt pool(struct zb *b, const struct zt *x, bool max, unsigned k, unsigned s,
	       unsigned p, const char *suffix);
struct zt apool(struct zb *b, const struct zt *x, uint64_t oh, uint64_t ow, const char *suffix);
struct zt flatten(struct zb *b, const struct zt *x, const char *suffix);
struct zt fc_rows(struct zb *b, const struct zt *x, uint64_t rows, uint64_t in_f,
		  uint64_t nout, bool weight, bool bias, const struct zt *shape,
		  const char *suffix);
struct zt fc(struct zb *b, const struct zt *x, uint64_t nout, bool bias, const char *suffix);
void comment_last(struct zb *b, const char *text);
struct zt dropout(struct zb *b, const struct zt *x, const char *suffix);
struct zt add(struct zb *b, unsigned n, const struct zt *const *xs, const char *suffix);
struct zt add2(struct zb *b, const struct zt *x, const struct zt *y, const char *suffix);
struct zt concat(struct zb *b, unsigned n, const struct zt *const *xs, unsigned axis,
		 const struct zt *shape, const char *suffix);
struct zt layernorm(struct zb *b, const struct zt *x, const char *suffix);
struct zt embedding(struct zb *b, const struct zt *ids, uint64_t vocab, uint64_t dim,
		    const char *suffix);
struct zt attention(struct zb *b, const struct zt *qkv, bool causal, const char *suffix);
struct zt softmax(struct zb *b, const struct zt *x, const char *suffix);
struct zt loss(struct zb *b, const struct zt *x, const char *suffix);
struct zt rmsnorm(struct zb *b, const struct zt *x, const char *suffix);
struct zt rope(struct zb *b, const struct zt *x, const char *suffix);
struct zt mul2(struct zb *b, const struct zt *x, const struct zt *y, const char *suffix);
/* Attention over q [B, S, C], k and v [B, S, kv*C/heads] -> [B, S, C]:
 * eager (the T x T probabilities saved) or flash. */
struct zt attention_gqa(struct zb *b, const struct zt *q, const struct zt *k, const struct zt *v,
			unsigned heads, bool eager, const char *suffix);
/* A layer with the last one's input and shape converted to dtype dt (a cast). */
struct zt cast(struct zb *b, const struct zt *x, enum mp_dtype dt, const char *suffix);
/* Freeze the parameters of the layer added last (no update time). */
void freeze_last(struct zb *b);
/* The last layer's output (o) and parameters in dt. */
void dtype_last(struct zb *b, struct zt *o, enum mp_dtype dt);
/* The last layer's weight (n elements) in 4 bits: "quant", and the time its
 * forward and backward take to dequantize it into the layer's dtype. */
void quantize_last(struct zb *b, enum mp_quant q, uint64_t n);

/* ---- the models (zoo.c's table) --------------------------------------- */

/* "model: what v is out of [lo, hi]" into *err, -1; 0 when inside (zoo.c). */
int check_range(const char *model, const char *what, uint32_t v, uint32_t lo, uint32_t hi,
		struct mp_error *err);

/*
 * A model's build function: check what only this model constrains in o
 * (every default applied), then append its layers to b and fill b->name,
 * b->desc and its own keys of b->gen.  0; -1 with *b->err when o is refused
 * (before any layer); a failure while building sets b->failed instead.
 */
typedef int zoo_build_fn(struct zb *b, const struct zoo_opts *o);

zoo_build_fn zoo_build_alexnet, zoo_build_vgg16, zoo_build_vgg19, zoo_build_resnet,
	     zoo_build_inception_v4, zoo_build_densenet121, zoo_build_unet,
	     zoo_build_mobilenet_v2;                     /* cnn.c */
zoo_build_fn zoo_build_gpt2, zoo_build_bert, zoo_build_llama; /* transformer.c */
zoo_build_fn zoo_build_seq2seq;                          /* rnn.c */

#endif
