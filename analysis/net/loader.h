/*
 * loader (internal to analysis/net/): the state of one net_load_json call and
 * what the loader's files share.  load.c drives it and builds the Net's
 * tensors and ops; parse.c reads a layer object into its struct lspec;
 * geometry.c gives conv and pool layers their geometry and checks the sizes
 * that shapes fix; lower.c orders the layers and lowers them to ops; ops.c
 * appends explicit "tensors" and "ops".  Functions that return int return 0,
 * or -1 with L->err holding "JSON.path: what was expected".
 */
#ifndef MP_NET_LOADER_H
#define MP_NET_LOADER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net.h"

/* What a layer's backward reads, besides the gradient of its output. */
enum {
	SAVE_INPUT = 1, SAVE_OUTPUT = 2, SAVE_PARAMS = 4, SAVE_MASK = 8,
	SAVE_STATS = 16,
	SAVE_INDICES = 32, /* max pool's argmax: an int64 per output element */
};

/* Conv and pool geometry keys (memplan-net(5) "Geometry"). */
enum { GK_KERNEL, GK_STRIDE, GK_PAD, GK_DILATION, GK_GROUPS, GK__COUNT };
extern const char *const geo_keys[GK__COUNT]; /* their JSON names */

/* A layer while loading: what the JSON said, before lowering. */
struct lspec {
	const char *name;
	enum mp_layer_type type;
	enum mp_dtype dtype;
	uint32_t n_inputs;
	int32_t *inputs;         /* [n_inputs] layer ids */
	uint64_t out_bytes, elems, stats_bytes;
	uint32_t n_params;
	uint64_t *param_bytes;   /* [n_params] */
	uint64_t *param_elems;   /* [n_params] elements (bytes / the dtype's size without a shape) */
	enum mp_dtype pdtype;    /* of the parameters: the layer's "dtype", else the precision's */
	bool frozen;             /* parameters without gradients or optimizer state */
	uint8_t quant;           /* enum mp_quant of parameter 0 (frozen fc only) */
	uint64_t dq_bytes;       /* its dequantized copy: each fwd and bwd op's workspace */
	bool ws_per_sample;      /* the workspace grows with the batch though the
				  * output does not (pytorch's loss: the logits') */
	bool saves_given;        /* the file's "saves" */
	uint64_t wcopy_bytes;    /* autocast: the weight's low-precision copy the
				  * backward keeps (L.wcopy, not per-sample) */
	uint64_t probs_bytes;    /* eager attention: the softmax probabilities it saves */
	double ms[3];            /* fwd, bwd, update; <0: not given */
	uint64_t ws_bytes;
	uint32_t n_algos;
	struct { const char *name; uint64_t ws; double ms[2]; uint32_t batch; } *algos;
	uint32_t batch;          /* first dimension of the shape; 1 without one */
	bool per_sample;         /* has a shape whose first dimension is the net's batch */
	bool has_shape;
	/* the shapes and the geometry go straight to net->layers[] (no copy
	 * per layer); the geometry keys' values wait there, in geom, until
	 * layer_geometry checks them */
	unsigned geo_given;      /* bit (1 << GK_*) per geometry key in the file */
	uint8_t geo_n[GK__COUNT]; /* 0: one integer for every dimension; else the array's length */
	unsigned saves;
	bool inplace, pool_max, timed;
	/* derived */
	bool needs_grad;
	uint32_t n_consumers;
	int32_t first_consumer;  /* for in-place checks */
};

struct loader {
	struct mp_net *net;
	struct mp_error *err;
	struct lspec *ls;        /* [n_layers] */
	uint32_t cap_tensors, cap_ops;
	struct mp_strmap tensor_names, op_names, layer_names;
	/* Lowered names are unique by construction: layer names are, and no
	 * generated suffix (.out, .dout, .paramK, .paramK.grad, .paramK.m, ...)
	 * is a proper suffix of another.  The tensor and op maps are filled only
	 * once explicit tensors or ops need lookups (maps_live). */
	bool maps_live;
	uint64_t total_bytes;    /* running total, see count_bytes */
};

/* Growable id list used while building an op's inputs and outputs, with
 * O(1) deduplication: mark[id] == gen for ids already in the current list
 * (an op may list 10^5 inputs; a scan per add would be quadratic). */
struct idlist {
	uint32_t n, cap;
	int32_t *v;
	uint32_t *pos;          /* [n] JSON position of each id (explicit ops) */
	uint32_t mark_cap, gen;
	uint32_t *mark;         /* [mark_cap] */
};

/* load.c: the Net under construction.  Names and arrays live in the net's
 * arena.  add_tensor and add_op return -1 and NULL when the name is taken
 * (only checked once explicit tensors or ops need the maps). */
void *arena_array(struct mp_net *net, size_t n, size_t elem);
const char *fmt_name(struct mp_net *net, const char *a, const char *b); /* a then b */
/* A tensor of the layer's dtype (the net's for layer -1); its id. */
int32_t add_tensor(struct loader *L, const char *name, uint64_t bytes,
		   enum mp_tensor_kind kind, int32_t layer);
int32_t add_tensor_dt(struct loader *L, const char *name, uint64_t bytes,
		      enum mp_tensor_kind kind, int32_t layer, enum mp_dtype dt);
/* A new op, zeroed but for these, its id in *id; borrowed until the next add_op. */
struct mp_op *add_op(struct loader *L, const char *name, enum mp_phase ph,
		     enum mp_layer_type type, int32_t layer, int32_t *id);
/* Add id (json_pos: where the file lists it); 1 if it was new in the list. */
int idl_add_at(struct idlist *l, int32_t id, uint32_t json_pos);
void idl_add(struct idlist *l, int32_t id);
/* The list's ids as an arena array of *n; the list starts again, empty. */
int32_t *idl_commit(struct mp_net *net, struct idlist *l, uint32_t *n);
void idl_release(struct idlist *l);

/* parse.c: layers[idx] into L->ls[idx] and L->net->layers[idx] (name and
 * type already there), and the values explicit tensors share with layers. */
int parse_layer(struct loader *L, json_t *obj, uint32_t idx);
int parse_size_pair(struct loader *L, json_t *obj, const char *path,
		    enum mp_dtype dt, uint64_t *bytes, uint64_t *elems,
		    uint64_t *dims, unsigned *ndim);
int parse_dtype(struct loader *L, json_t *v, const char *path, enum mp_dtype *dt);
int count_bytes(struct loader *L, uint64_t bytes, const char *key, const char *path);

/* geometry.c, once every layer is parsed: conv and pool geometry, and the
 * sizes of add and concat layers. */
int layer_geometry(struct loader *L, uint32_t idx);
int check_sizes(struct loader *L, uint32_t idx);

/* lower.c: the SAVE_* bits of a layer type; the layers in an order where
 * inputs come first (-1 on a cycle); the ops of every layer. */
unsigned default_saves(const struct lspec *s, const struct mp_shape *out, enum mp_framework fw);
int order_layers(struct loader *L, uint32_t n, int32_t *order);
int lower_layers(struct loader *L, uint32_t n, const int32_t *order);

/* ops.c: the "tensors" and "ops" arrays (the tensor and op maps live). */
int parse_tensors(struct loader *L, json_t *arr);
int parse_ops(struct loader *L, json_t *arr);

#endif
