/*
 * What both executors (host and CUDA) share: the check that a schedule's
 * indices are in range before they are used, and the pool's capacity.
 */
#include "exec.h"
#include "pool.h"

#include <stdbool.h>

int exec_check_shape(const struct mp_net *net, const struct mp_schedule *s, uint32_t *bad, struct mp_error *err)
{
	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];
		bool is_op = a->kind == MP_ACT_COMPUTE || a->kind == MP_ACT_RECOMPUTE;

		*bad = i;
		if (is_op ? (a->op < 0 || (uint32_t)a->op >= net->n_ops)
			  : (a->tensor < 0 || (uint32_t)a->tensor >= net->n_tensors)) {
			mp_error_set(err, "schedule[%u] %s: no such op or tensor", i, mp_act_name(a->kind));
			return -1;
		}
		if (is_op) {
			const struct mp_op *op = &net->ops[a->op];

			if (a->algo >= (int32_t)op->n_algos || a->micro < 1 ||
			    (a->micro > 1 && (uint64_t)a->micro_at + a->micro > s->n_micro)) {
				mp_error_set(err, "schedule[%u] %s '%s': bad algorithm or micro-batch count", i,
					     mp_act_name(a->kind), op->name);
				return -1;
			}
			for (uint32_t k = 0; a->micro > 1 && k < a->micro; k++)
				if (s->micro[a->micro_at + k].algo >= (int32_t)op->n_algos) {
					mp_error_set(err, "schedule[%u] %s '%s': bad micro-batch", i, mp_act_name(a->kind), op->name);
					return -1;
				}
		}
		if (a->kind == MP_ACT_ALLOC && a->bytes > MP_MAX_BYTES) {
			mp_error_set(err, "schedule[%u] alloc '%s': %llu bytes is more than memplan accepts", i,
				     net->tensors[a->tensor].name, (unsigned long long)a->bytes);
			return -1;
		}
	}
	*bad = UINT32_MAX;
	return 0;
}

uint64_t exec_pool_bytes(const struct mp_plan_req *req, const struct mp_plan *p, const struct mp_exec_opts *o)
{
	uint64_t cap = o->pool_bytes;

	if (!cap)
		cap = req->budget_bytes > p->arena_bytes ? req->budget_bytes : p->arena_bytes;
	return pool_blocks(cap) * POOL_BLOCK_BYTES;
}
