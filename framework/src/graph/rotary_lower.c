/* rotary_lower.c - the loader's lowering of ONNX and com.microsoft RotaryEmbedding to standard
 * ops: the cos / sin rows by Gather of position_ids (com.microsoft's offset form: a Range from
 * it), Unsqueeze over the heads, the rotated halves (or even / odd pairs: Slices with step 2) as
 * x1 * cos - x2 * sin and x2 * cos + x1 * sin, Concat back (pairs: Unsqueeze, Concat, Reshape)
 * with the dims not rotated. 3D input is taken as [B, S, N, H] by a Reshape. */
#include <string.h>

#include "graph/attn_build.h"
#include "graph/graph_internal.h"
#include "graph/rotary.h"

/* x[..., lo:hi:step] on the last axis (into out when >= 0). */
static int32_t slice_last(mi__ab_t *b, const char *what, int32_t x, int64_t lo, int64_t hi, int64_t step, int32_t out) {
  static const int64_t ax[1] = {-1};
  int32_t in[5] = {x, mi__ab_c_i64(b, "starts", 1, 1, &lo), mi__ab_c_i64(b, "ends", 1, 1, &hi),
                   mi__ab_c_i64(b, "axes", 1, 1, ax), mi__ab_c_i64(b, "steps", 1, 1, &step)};
  return mi__ab_op_to(b, "Slice", what, 5, in, out);
}

static int32_t bin(mi__ab_t *b, const char *op, const char *what, int32_t x, int32_t y) {
  return mi__ab_op(b, op, what, 2, (int32_t[]){x, y});
}

int32_t mi__rot_apply(mi__ab_t *b, const mi__rot_t *p, int32_t xh, int32_t x1, int32_t cr, int32_t sr, int32_t out) {
  int64_t r = p->rot, half = r / 2;
  if (x1 < 0) x1 = slice_last(b, "x1", xh, 0, p->interleaved ? r : half, p->interleaved ? 2 : 1, -1);
  int32_t x2 = slice_last(b, "x2", xh, p->interleaved ? 1 : half, r, p->interleaved ? 2 : 1, -1);
  int32_t re = bin(b, "Sub", "real", bin(b, "Mul", "x1_cos", x1, cr), bin(b, "Mul", "x2_sin", x2, sr));
  int32_t im = bin(b, "Add", "imag", bin(b, "Mul", "x2_cos", x2, cr), bin(b, "Mul", "x1_sin", x1, sr));
  int32_t rotated, last_out = r == p->head ? out : -1;
  if (p->interleaved) {
    static const int64_t last[1] = {-1};
    int64_t back[4] = {0, 0, 0, -1};
    int32_t pr = mi__ab_op(b, "Concat", "pairs", 2,
                           (int32_t[]){mi__ab_unsqueeze(b, "real1", re, 1, last), mi__ab_unsqueeze(b, "imag1", im, 1, last)});
    mi__ab_attr_int(b, "axis", -1);
    rotated = mi__ab_op_to(b, "Reshape", "rotated", 2, (int32_t[]){pr, mi__ab_c_i64(b, "shape", 1, 4, back)}, last_out);
  } else {
    rotated = mi__ab_op_to(b, "Concat", "rotated", 2, (int32_t[]){re, im}, last_out);
    mi__ab_attr_int(b, "axis", -1);
  }
  if (r < p->head) {
    int32_t rest = slice_last(b, "not_rotated", xh, r, p->head, 1, -1);
    rotated = mi__ab_op_to(b, "Concat", "with_rest", 2, (int32_t[]){rotated, rest}, out);
    mi__ab_attr_int(b, "axis", -1);
  }
  return rotated;
}

int32_t mi__rot_lower_one(mi_graph_t *g, int32_t i, mi_error_t *err) {
  mi__in_view_t ins[4];
  mi__rot_t p;
  char why[256];
  mi__ab_t b;
  const mi_node_t *n = &g->nodes[i];
  int ms = n->domain && !strcmp(n->domain, "com.microsoft");
  const char *op = ms ? "com.microsoft RotaryEmbedding" : "RotaryEmbedding";
  mi__ab_start(&b, g, n);
  if (!ms && g->opset < 23)
    return mi_errorf(err, MI_ERR_PARSE, "node '%s' (%s): the op exists from opset 23 on", b.name, op);
  if (g->opset < 11) /* Slice with steps and negative axes, Range */
    return mi_errorf(err, MI_ERR_UNSUPPORTED, "node '%s' (%s): needs opset >= 11", b.name, op);
  mi__in_views_of_node(g, n, ins, 4);
  if (mi__rot_check(n, ms, ins, &p, why, sizeof why)) return mi_errorf(err, MI_ERR_PARSE, "node '%s' (%s): %s", b.name, op, why);
  int32_t x = n->inputs[p.in_x], cc = n->inputs[p.in_cos], ss = n->inputs[p.in_sin], y = n->outputs[0];
  int32_t pos = p.pos != MI__ROT_POS_NONE ? n->inputs[p.in_pos] : -1;
  int64_t r = p.rot, half = r / 2, xshape[4] = {0, 0, p.heads, p.head}, yshape[3] = {0, 0, -1};
  /* the node becomes its first op on X: the Reshape to heads (3D), else the Slice of x1 */
  int32_t first = mi__ab_tensor(&b, p.x4 ? "x1" : "x_heads"), first_in[5];
  int32_t xh = p.x4 ? x : first;
  if (p.x4) {
    int64_t lo = 0, hi = p.interleaved ? r : half, st = p.interleaved ? 2 : 1;
    static const int64_t ax[1] = {-1};
    first_in[0] = x, first_in[1] = mi__ab_c_i64(&b, "starts", 1, 1, &lo), first_in[2] = mi__ab_c_i64(&b, "ends", 1, 1, &hi);
    first_in[3] = mi__ab_c_i64(&b, "axes", 1, 1, ax), first_in[4] = mi__ab_c_i64(&b, "steps", 1, 1, &st);
  } else {
    first_in[0] = x, first_in[1] = mi__ab_c_i64(&b, "shape", 1, 4, xshape);
  }
  /* cos / sin rows: [B, S, r / 2] or (offset form) [S, r / 2] */
  int32_t rows = pos;
  if (p.pos == MI__ROT_POS_OFFSET) {
    static const int64_t one = 1, zero = 0;
    int32_t p0 = mi__ab_op(&b, "Gather", "offset", 2, (int32_t[]){pos, mi__ab_c_i64(&b, "index", 0, 1, &zero)});
    mi__ab_attr_int(&b, "axis", 0);
    int32_t sh = mi__ab_op(&b, "Shape", "x_shape", 1, &x);
    int64_t sax = p.x4 ? 2 : 1;
    int32_t slen = mi__ab_op(&b, "Gather", "seq_len", 2, (int32_t[]){sh, mi__ab_c_i64(&b, "index", 0, 1, &sax)});
    mi__ab_attr_int(&b, "axis", 0);
    rows = mi__ab_op(&b, "Range", "positions", 3,
                     (int32_t[]){p0, bin(&b, "Add", "end", p0, slen), mi__ab_c_i64(&b, "one", 0, 1, &one)});
  }
  int32_t cr = cc, sr = ss;
  if (rows >= 0) {
    cr = mi__ab_op(&b, "Gather", "cos", 2, (int32_t[]){cc, rows});
    mi__ab_attr_int(&b, "axis", 0);
    sr = mi__ab_op(&b, "Gather", "sin", 2, (int32_t[]){ss, rows});
    mi__ab_attr_int(&b, "axis", 0);
  }
  /* over the heads: [B, S, 1, r / 2] for [B, S, N, H]; [B, 1, S, r / 2] for [B, N, S, H] ([S, r / 2]
   * broadcasts there as it is; [S, 1, r / 2] for [B, S, N, H]) */
  int64_t hax = p.x4 ? 1 : (p.pos == MI__ROT_POS_OFFSET ? 1 : 2);
  if (!(p.x4 && p.pos == MI__ROT_POS_OFFSET)) {
    cr = mi__ab_unsqueeze(&b, "cos_heads", cr, 1, &hax);
    sr = mi__ab_unsqueeze(&b, "sin_heads", sr, 1, &hax);
  }
  int32_t rotated = mi__rot_apply(&b, &p, xh, p.x4 ? first : -1, cr, sr, p.x4 ? y : -1);
  if (!p.x4) mi__ab_op_to(&b, "Reshape", "output", 2, (int32_t[]){rotated, mi__ab_c_i64(&b, "shape", 1, 3, yshape)}, y);
  if (!b.ok || mi__ab_retype(g, i, p.x4 ? "Slice" : "Reshape", p.x4 ? 5 : 2, first_in, first))
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", b.name);
  return MI_OK;
}
