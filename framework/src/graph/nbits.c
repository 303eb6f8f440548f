/* nbits.c - com.microsoft MatMulNBits: attribute and layout checks shared by shape inference and
 * the reference, its packed codes read back, and the session's lowering to a blocked
 * DequantizeLinear + MatMul so that every device runs it (folded to float, or on the codes where
 * a device takes weight-only codes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/nbits.h"

static int is_float(int32_t dt) { return dt == MI_DTYPE_FLOAT32 || dt == MI_DTYPE_FLOAT16; }

int mi__nbits_check(const mi_node_t *node, const mi__nb_in_t *ins, mi__nbits_t *p, char *why,
                    size_t cap) {
  const mi__nb_in_t *a = &ins[MI__NB_A], *b = &ins[MI__NB_B], *s = &ins[MI__NB_SCALES];
  const mi__nb_in_t *z = &ins[MI__NB_ZP], *gi = &ins[MI__NB_GIDX], *bias = &ins[MI__NB_BIAS];
  memset(p, 0, sizeof *p);
  p->k = mi_node_attr_int(node, "K", -1);
  p->n = mi_node_attr_int(node, "N", -1);
  p->bits = mi_node_attr_int(node, "bits", 4);
  p->block = mi_node_attr_int(node, "block_size", -1);
  if (p->k < 1 || p->n < 1)
    return mi__why(why, cap, "attributes K = %lld and N = %lld must be given and >= 1", (long long)p->k,
                   (long long)p->n);
  if (p->bits != 2 && p->bits != 4 && p->bits != 8)
    return mi__why(why, cap, "bits = %lld (2, 4 or 8 are supported)", (long long)p->bits);
  /* ONNX Runtime's kernels take power-of-two blocks of at least 16 */
  if (p->block < 16 || (p->block & (p->block - 1)))
    return mi__why(why, cap, "block_size = %lld is not a power of two >= 16", (long long)p->block);
  p->kb = (p->k + p->block - 1) / p->block;
  p->blob = p->block * p->bits / 8;
  p->zp_row = (p->kb * p->bits + 7) / 8;
  if (!a->present || !b->present || !s->present)
    return mi__why(why, cap, "inputs A, B and scales are required");
  if (a->dtype != MI_DTYPE_UNDEFINED && a->dtype != MI_DTYPE_FLOAT32)
    return mi__why(why, cap, "A must be FLOAT32 (dtype %lld)", (long long)a->dtype);
  if (a->rank == 0 || (a->rank > 0 && a->dims[a->rank - 1] >= 0 && a->dims[a->rank - 1] != p->k))
    return mi__why(why, cap, "A's last dim is %lld, K = %lld", a->rank > 0 ? (long long)a->dims[a->rank - 1] : 0,
                   (long long)p->k);
  if (b->dtype != MI_DTYPE_UINT8)
    return mi__why(why, cap, "B must be UINT8 packed codes (dtype %lld)", (long long)b->dtype);
  if (b->rank >= 0 && (b->rank != 3 || b->dims[0] != p->n || b->dims[1] != p->kb || b->dims[2] != p->blob)) {
    snprintf(why, cap,
             "B has shape [%lld, %lld, %lld] (rank %d), N, ceil(K / block_size), block_size * bits / 8 "
             "need [%lld, %lld, %lld]",
             b->rank > 0 ? (long long)b->dims[0] : -1, b->rank > 1 ? (long long)b->dims[1] : -1,
             b->rank > 2 ? (long long)b->dims[2] : -1, (int)b->rank, (long long)p->n, (long long)p->kb,
             (long long)p->blob);
    return -1;
  }
  if (!is_float(s->dtype))
    return mi__why(why, cap, "scales must be FLOAT32 or FLOAT16 (dtype %lld)", (long long)s->dtype);
  if (s->rank >= 0 && mi__in_view_numel(s) != p->n * p->kb)
    return mi__why(why, cap, "scales have %lld values, N * ceil(K / block_size) = %lld", (long long)mi__in_view_numel(s),
                   (long long)(p->n * p->kb));
  if (z->present) {
    p->zp_float = is_float(z->dtype);
    if (p->zp_float && z->dtype != s->dtype)
      return mi__why(why, cap, "float zero points must have the scales' dtype");
    if (!p->zp_float && z->dtype != MI_DTYPE_UINT8)
      return mi__why(why, cap, "zero points must be packed UINT8 or the scales' dtype (dtype %lld)",
                     (long long)z->dtype);
    int64_t want = p->zp_float ? p->n * p->kb : p->n * p->zp_row;
    if (z->rank >= 0 && mi__in_view_numel(z) != want)
      return mi__why(why, cap, "zero points have %lld values, the layout needs %lld", (long long)mi__in_view_numel(z),
                     (long long)want);
  }
  if (gi->present) {
    if (gi->dtype != MI_DTYPE_INT32 || (gi->rank >= 0 && mi__in_view_numel(gi) != p->k))
      return mi__why(why, cap, "g_idx must be INT32 with K = %lld values", (long long)p->k);
    if (!gi->data) return mi__why(why, cap, "a runtime g_idx is not supported");
    for (int64_t k = 0; k < p->k; k++)
      if (((const int32_t *)gi->data)[k] != k / p->block)
        return mi__why(why, cap, "g_idx[%lld] = %lld: reordered groups (act-order) are not supported",
                       (long long)k, (long long)((const int32_t *)gi->data)[k]);
  }
  if (bias->present && (bias->dtype != MI_DTYPE_FLOAT32 || (bias->rank >= 0 && mi__in_view_numel(bias) != p->n)))
    return mi__why(why, cap, "bias must be FLOAT32 with N = %lld values", (long long)p->n);
  return 0;
}

static float half(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
  if (e == 0x1f) u = sign | 0x7f800000u | (m << 13);
  else if (e)
    u = sign | ((e + 112) << 23) | (m << 13);
  else if (!m)
    u = sign;
  else { /* subnormal: normalise */
    e = 113;
    while (!(m & 0x400)) {
      m <<= 1;
      e--;
    }
    u = sign | (e << 23) | ((m & 0x3ff) << 13);
  }
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static float float_at(const mi__nb_in_t *x, int64_t i) {
  return x->dtype == MI_DTYPE_FLOAT16 ? half(((const uint16_t *)x->data)[i]) : ((const float *)x->data)[i];
}

float mi__nbits_scale(const mi__nbits_t *p, const mi__nb_in_t *scales, int64_t n, int64_t blk) {
  return float_at(scales, n * p->kb + blk);
}

float mi__nbits_zero(const mi__nbits_t *p, const mi__nb_in_t *zp, int64_t n, int64_t blk) {
  if (!zp->present) return (float)(1 << (p->bits - 1));
  if (p->zp_float) return float_at(zp, n * p->kb + blk);
  int64_t bit = blk * p->bits;
  const uint8_t *row = (const uint8_t *)zp->data + n * p->zp_row;
  return (float)((row[bit / 8] >> (bit % 8)) & ((1 << p->bits) - 1));
}

int mi__graph_has_nbits(const mi_graph_t *g) {
  for (int32_t i = 0; i < g->node_count; i++)
    if (g->nodes[i].domain && !strcmp(g->nodes[i].domain, "com.microsoft") &&
        !strcmp(g->nodes[i].op_type, "MatMulNBits"))
      return 1;
  return 0;
}

/* A new constant named "<node>/<what>". */
static int32_t new_const(mi_graph_t *g, const char *node, const char *what, int32_t dtype, int32_t rank,
                         const int64_t *dims, void *data, size_t nbytes) {
  char nm[512];
  snprintf(nm, sizeof nm, "%s/%s", node, what);
  for (int k = 1; mi_graph_find_tensor(g, nm) >= 0; k++) snprintf(nm, sizeof nm, "%s/%s_%d", node, what, k);
  int32_t t = mi_graph_add_tensor(g, nm, dtype, rank, dims);
  if (t < 0) return -1;
  g->tensors[t].data = data; /* the graph takes the buffer */
  g->tensors[t].nbytes = nbytes;
  return t;
}

/* Stores code v at element i: packed INT4 v - 8 (low nibble first), else a byte. */
static void put_code(uint8_t *dst, int packed, int64_t i, int v) {
  if (packed) dst[i / 2] |= (uint8_t)(((v - 8) & 0xf) << (4 * (i & 1)));
  else
    dst[i] = (uint8_t)v;
}

/* Node i into MatMul(A, W) (+ Add bias): W the blocked DequantizeLinear of its codes. */
static int32_t lower_one(mi_graph_t *g, int32_t i, mi_error_t *err) {
  mi__nb_in_t ins[6];
  mi__nbits_t p;
  char why[256];
  const mi_node_t *n = &g->nodes[i];
  mi__in_views_of_node(g, n, ins, 6);
  if (mi__nbits_check(n, ins, &p, why, sizeof why))
    return mi_errorf(err, MI_ERR_PARSE, "node '%s' (com.microsoft MatMulNBits): %s", n->name, why);
  for (int32_t k = MI__NB_B; k < 6; k++)
    if (ins[k].present && !ins[k].data)
      return mi_errorf(err, MI_ERR_UNSUPPORTED, "node '%s' (com.microsoft MatMulNBits): input %d is not a constant",
                       n->name, (int)k);
  char name[400];
  snprintf(name, sizeof name, "%s", n->name);
  int64_t kn[2] = {p.k, p.n}, bn[2] = {p.kb, p.n};
  int32_t a = n->inputs[MI__NB_A], y = n->outputs[0], w, bias = ins[MI__NB_BIAS].present ? n->inputs[MI__NB_BIAS] : -1;
  if (p.zp_float) { /* no DequantizeLinear takes float zero points: the weight, dequantized now */
    float *wf = malloc((size_t)(p.k * p.n) * sizeof *wf);
    if (!wf) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", name);
    for (int64_t c = 0; c < p.n; c++)
      for (int64_t k = 0; k < p.k; k++) {
        int64_t blk = k / p.block;
        /* the reference's value: (q - z) * s in double, rounded once */
        wf[k * p.n + c] = (float)(((double)mi__nbits_code(&p, ins[MI__NB_B].data, c, k) -
                                   (double)mi__nbits_zero(&p, &ins[MI__NB_ZP], c, blk)) *
                                  (double)mi__nbits_scale(&p, &ins[MI__NB_SCALES], c, blk));
      }
    if ((w = new_const(g, name, "weight", MI_DTYPE_FLOAT32, 2, kn, wf, (size_t)(p.k * p.n) * sizeof *wf)) < 0) {
      free(wf);
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", name);
    }
  } else {
    /* 2- and 4-bit codes stay at 4 bits: packed INT4 q - 8 with zero points z - 8 (the same
     * q - z); 8-bit ones are UINT8 */
    int pk = p.bits <= 4;
    int32_t dt = pk ? MI_DTYPE_INT4 : MI_DTYPE_UINT8;
    size_t nq = pk ? (size_t)(p.k * p.n + 1) / 2 : (size_t)(p.k * p.n);
    size_t nz = pk ? (size_t)(p.kb * p.n + 1) / 2 : (size_t)(p.kb * p.n);
    uint8_t *q = calloc(nq, 1), *zq = calloc(nz, 1);
    float *sc = malloc((size_t)(p.kb * p.n) * sizeof *sc);
    int32_t tq = -1, ts = -1, tz = -1;
    if (q && zq && sc) {
      for (int64_t c = 0; c < p.n; c++) {
        for (int64_t k = 0; k < p.k; k++) put_code(q, pk, k * p.n + c, mi__nbits_code(&p, ins[MI__NB_B].data, c, k));
        for (int64_t blk = 0; blk < p.kb; blk++) {
          sc[blk * p.n + c] = mi__nbits_scale(&p, &ins[MI__NB_SCALES], c, blk);
          put_code(zq, pk, blk * p.n + c, (int)mi__nbits_zero(&p, &ins[MI__NB_ZP], c, blk));
        }
      }
      if ((tq = new_const(g, name, "codes", dt, 2, kn, q, nq)) >= 0) q = NULL;
      if (tq >= 0 && (ts = new_const(g, name, "scales", MI_DTYPE_FLOAT32, 2, bn, sc,
                                     (size_t)(p.kb * p.n) * sizeof *sc)) >= 0)
        sc = NULL;
      if (ts >= 0 && (tz = new_const(g, name, "zero_points", dt, 2, bn, zq, nz)) >= 0) zq = NULL;
    }
    free(q), free(zq), free(sc);
    char wn[512];
    snprintf(wn, sizeof wn, "%s/weight", name);
    int32_t dq_in[3] = {tq, ts, tz};
    w = tz >= 0 ? mi_graph_add_tensor(g, wn, MI_DTYPE_FLOAT32, 2, kn) : -1;
    snprintf(wn, sizeof wn, "%s/dequantize", name);
    int32_t d = w >= 0 ? mi_graph_add_node(g, "DequantizeLinear", wn, 3, dq_in, 1, &w) : -1;
    if (d < 0 || mi_node_set_int(g, d, "axis", 0) || mi_node_set_int(g, d, "block_size", p.block))
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", name);
  }
  /* node i becomes the MatMul (into a new tensor when a bias Add follows) */
  int32_t mm_out = y;
  if (bias >= 0) {
    char tn[512];
    snprintf(tn, sizeof tn, "%s/matmul", name);
    mm_out = mi_graph_add_tensor(g, tn, MI_DTYPE_FLOAT32, -1, NULL);
    int32_t add_in[2] = {mm_out, bias};
    snprintf(tn, sizeof tn, "%s/bias", name);
    if (mm_out < 0 || mi_graph_add_node(g, "Add", tn, 2, add_in, 1, &y) < 0)
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", name);
  }
  mi_node_t *m = &g->nodes[i]; /* after the adds: the node array may have moved */
  char *op = mi__node_own_strings(m) ? NULL : mi__strdup("MatMul");
  if (!op) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory lowering '%s'", name);
  mi__node_become(m, op);
  m->inputs[0] = a;
  m->inputs[1] = w;
  m->input_count = 2;
  m->outputs[0] = mm_out;
  g->tensors[mm_out].producer = i;
  return MI_OK;
}

int32_t mi__graph_lower_nbits(mi_graph_t *g, mi_error_t *err) {
  int32_t rc = MI_OK, count = g->node_count;
  for (int32_t i = 0; i < count && rc == MI_OK; i++)
    if (g->nodes[i].domain && !strcmp(g->nodes[i].domain, "com.microsoft") &&
        !strcmp(g->nodes[i].op_type, "MatMulNBits"))
      rc = lower_one(g, i, err);
  if (rc == MI_OK) rc = mi_graph_toposort(g, err);
  return rc;
}
