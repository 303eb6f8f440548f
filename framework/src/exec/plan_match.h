/* plan_match.h - the plan's matchers shared by plan.c (fused groups, chains after a conv), mm_fold.c and
 * plan_int.c (the float tails of ONNX Runtime's dynamic quantization after integer ops). */
#ifndef MI_EXEC_PLAN_MATCH_H
#define MI_EXEC_PLAN_MATCH_H

#include "exec/exec.h"

/* Two tensors of one known shape (a residual that does not broadcast). */
int mi__plan_same_dims(const mi_tensor_t *a, const mi_tensor_t *b);
/* The value of a constant one-element FLOAT32 input i of `node`, or NAN. */
double mi__plan_const_scalar(const mi_graph_t *g, mi_array_t *const *consts, int32_t node, int32_t i);
/* The fuse bit an elementwise node after a conv needs (MI_FUSE_*), 0 when it is not one; `cur`
 * is the chain's value, `first`: nothing but a per-channel bias since the conv. */
uint32_t mi__plan_chain_bit(const mi_graph_t *g, mi_array_t *const *consts, int32_t node, int32_t cur, int first);
/* Hard-swish written out on runtime value x (x * clip(x + 3, 0, 6) / 6, in any of its spellings)
 * as its four nodes q[0..3]; 1 when it matches. */
int mi__plan_match_hswish(const mi_graph_t *g, mi_array_t *const *consts, int32_t x, int32_t q[4]);

/* The one running node that reads runtime value t, or -1 (t a graph output, or read by more or
 * none; nodes marked MI__ROLE_UNREAD never run and do not count). plan.c; mm_fold.c uses it too. */
int32_t mi__plan_live_reader(const mi_graph_t *g, const mi__plan_t *p, int32_t t);

/* plan_int.c */
int32_t mi__plan_tail_dynq(const mi_graph_t *g, const mi__plan_t *p, int32_t cur);
int mi__plan_int_tail(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t n, int hswish,
                      int pad, mi__unit_t *u);
int mi__plan_gemm_int_tail(const mi_graph_t *g, const mi__plan_t *p, mi_array_t *const *consts, int32_t n, int act,
                           mi__unit_t *u);

#endif
