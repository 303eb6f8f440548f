/* xf_tensors.c - where a quantized model's error comes from, tensor by tensor: each float
 * tensor of the transformed model against the same tensor of the model with the same passes
 * and every layer FP32 (the error accumulated up to it), and, for each quantized activation,
 * the error of its own rounding alone (its scale and zero point applied to the FP32 values),
 * with what a per-channel scale would leave. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transform/xf_internal.h"

/* Scale and zero point of the QuantizeLinear that reads tensor t of x, or 0. */
static float quant_params(const mi_graph_t *x, int32_t t, int32_t *zp) {
  for (int32_t m = 0; m < x->node_count; m++) {
    const mi_node_t *n = &x->nodes[m];
    if (strcmp(n->op_type, "QuantizeLinear") || n->inputs[0] != t || n->input_count < 3) continue;
    const mi_tensor_t *s = &x->tensors[n->inputs[1]], *z = &x->tensors[n->inputs[2]];
    if (!s->data || !z->data || s->dtype != MI_DTYPE_FLOAT32 || mi__xf_numel(x, n->inputs[1]) != 1)
      continue;
    *zp = z->dtype == MI_DTYPE_UINT8 ? ((const uint8_t *)z->data)[0] : ((const int8_t *)z->data)[0];
    return ((const float *)s->data)[0];
  }
  return 0.0f;
}

static int32_t out_index(mi_graph_t *g, int32_t t) {
  for (int32_t i = 0; i < g->output_count; i++)
    if (g->outputs[i] == t) return i;
  return mi_graph_add_output(g, t) == MI_OK ? g->output_count - 1 : -1;
}

/* Squared error of rounding v with a per-channel (axis 1) UINT8 min-max scale, channel ranges
 * from lo/hi (updated first when `range` is set). */
static double per_channel_sq(const mi_array_t *y, double *lo, double *hi, int range) {
  const float *v = y->data;
  int64_t ch = y->dims[1], outer = y->dims[0], inner = 1;
  double e = 0.0;
  for (int32_t k = 2; k < y->rank; k++) inner *= y->dims[k];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t c = 0; c < ch; c++) {
      const float *p = v + (o * ch + c) * inner;
      if (range) {
        for (int64_t i = 0; i < inner; i++) lo[c] = fmin(lo[c], p[i]), hi[c] = fmax(hi[c], p[i]);
        continue;
      }
      double l = fmin(lo[c], 0.0), h = fmax(hi[c], 0.0), s = (h - l) / 255.0, z;
      if (s <= 0.0) continue;
      z = rint(-l / s);
      for (int64_t i = 0; i < inner; i++) {
        double q = fmin(fmax(rint(p[i] / s) + z, 0.0), 255.0), d = (q - z) * s - p[i];
        e += d * d;
      }
    }
  return e;
}

MI_API int32_t mi_xf_tensor_errors(const mi_graph_t *g, const mi_xf_config_t *c,
                                   const mi_xf_samples_t *calib, const mi_xf_samples_t *eval,
                                   mi_xf_tensor_error_t **out, int32_t *count, mi_error_t *err) {
  mi_xf_config_t *sc = NULL;
  mi_graph_t *x = NULL, *b = NULL;
  mi_xf_tensor_error_t *res = NULL;
  int32_t *bi = NULL, *xi = NULL, *map = NULL, n_out = 0, rc = MI_OK, nt = 0;
  double *num = NULL, *den = NULL, *own = NULL, *pc = NULL, **lo = NULL, **hi = NULL;
  float *scale = NULL;
  int32_t *zp = NULL;
  mi_array_t **ob = NULL, **ox = NULL;
  if (out) *out = NULL;
  if (count) *count = 0;
  if (!g || !c || !eval || !out || !count)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "tensor errors: NULL argument");
  mi_xf_apply_opts_t opts = {.calib = calib ? calib : eval};
  if (!(sc = mi__xf_fp32_shadow(c))) goto oom;
  if ((rc = mi_xf_apply(g, c, &opts, &x, NULL, err)) != MI_OK ||
      (rc = mi_xf_apply(g, sc, &opts, &b, NULL, err)) != MI_OK)
    goto done;
  nt = b->tensor_count;
  bi = calloc((size_t)nt + 1, sizeof *bi);
  xi = calloc((size_t)nt + 1, sizeof *xi);
  map = calloc((size_t)nt + 1, sizeof *map);
  num = calloc((size_t)nt + 1, sizeof *num);
  den = calloc((size_t)nt + 1, sizeof *den);
  own = calloc((size_t)nt + 1, sizeof *own);
  pc = calloc((size_t)nt + 1, sizeof *pc);
  lo = calloc((size_t)nt + 1, sizeof *lo);
  hi = calloc((size_t)nt + 1, sizeof *hi);
  scale = calloc((size_t)nt + 1, sizeof *scale);
  zp = calloc((size_t)nt + 1, sizeof *zp);
  if (!bi || !xi || !map || !num || !den || !own || !pc || !lo || !hi || !scale || !zp) goto oom;
  for (int32_t t = 0; t < nt; t++) {
    int32_t u;
    map[t] = -1;
    if (b->tensors[t].data || !b->tensors[t].name || b->tensors[t].dtype != MI_DTYPE_FLOAT32) continue;
    if ((u = mi_graph_find_tensor(x, b->tensors[t].name)) < 0 || x->tensors[u].data) continue;
    scale[t] = quant_params(x, u, &zp[t]);
    if ((bi[t] = out_index(b, t)) < 0 || (xi[t] = out_index(x, u)) < 0) goto oom;
    map[t] = u;
  }
  ob = calloc((size_t)b->output_count + 1, sizeof *ob);
  ox = calloc((size_t)x->output_count + 1, sizeof *ox);
  if (!ob || !ox) goto oom;
  /* Pass 0: the per-channel ranges of the quantized tensors; pass 1: the errors. */
  for (int pass = 0; pass < 2 && rc == MI_OK; pass++)
    for (int32_t k = 0; k < eval->sample_count && rc == MI_OK; k++) {
      const mi_array_t *const *in = (const mi_array_t *const *)eval->inputs + (size_t)k * eval->input_count;
      rc = mi_ref_run(b, in, eval->input_count, ob, b->output_count, err);
      if (rc == MI_OK && pass) rc = mi_ref_run(x, in, eval->input_count, ox, x->output_count, err);
      for (int32_t t = 0; rc == MI_OK && t < nt; t++) {
        const mi_array_t *p = map[t] >= 0 ? ob[bi[t]] : NULL, *q = pass && p ? ox[xi[t]] : NULL;
        if (!p || p->dtype != MI_DTYPE_FLOAT32) continue;
        if (scale[t] > 0.0f && p->rank >= 2 && p->dims[1] > 0) {
          if (!lo[t]) {
            lo[t] = malloc((size_t)p->dims[1] * sizeof **lo);
            hi[t] = malloc((size_t)p->dims[1] * sizeof **hi);
            if (!lo[t] || !hi[t]) goto oom;
            for (int64_t i = 0; i < p->dims[1]; i++) lo[t][i] = INFINITY, hi[t][i] = -INFINITY;
          }
          pc[t] += per_channel_sq(p, lo[t], hi[t], !pass);
        }
        if (!pass || !q || q->nbytes != p->nbytes) continue;
        const float *u = p->data, *v = q->data;
        int64_t n = mi_array_numel(p);
        for (int64_t i = 0; i < n; i++) {
          double d = (double)v[i] - u[i];
          num[t] += d * d;
          den[t] += (double)u[i] * u[i];
          if (scale[t] > 0.0f) {
            double qv = fmin(fmax(rint(u[i] / scale[t]) + zp[t], 0.0), 255.0);
            double e = (qv - zp[t]) * scale[t] - u[i];
            own[t] += e * e;
          }
        }
      }
      for (int32_t i = 0; i < b->output_count; i++) mi_array_destroy(ob[i]), ob[i] = NULL;
      for (int32_t i = 0; i < x->output_count; i++) mi_array_destroy(ox[i]), ox[i] = NULL;
    }
  if (rc != MI_OK) goto done;
  if (!(res = calloc((size_t)nt + 1, sizeof *res))) goto oom;
  /* In node order: each node's outputs as the graph computes them. */
  for (int32_t n = 0; n < b->node_count; n++)
    for (int32_t j = 0; j < b->nodes[n].output_count; j++) {
      int32_t t = b->nodes[n].outputs[j];
      if (t < 0 || map[t] < 0 || den[t] <= 0.0) continue;
      mi_xf_tensor_error_t *r = &res[n_out++];
      snprintf(r->tensor, sizeof r->tensor, "%s", b->tensors[t].name);
      snprintf(r->op, sizeof r->op, "%s", b->nodes[n].op_type);
      r->quantized = scale[t] > 0.0f;
      r->rel_l2 = sqrt(num[t] / den[t]);
      r->own_rel_l2 = r->quantized ? sqrt(own[t] / den[t]) : 0.0;
      r->per_channel_rel_l2 = r->quantized && lo[t] ? sqrt(pc[t] / den[t]) : 0.0;
    }
  *out = res;
  *count = n_out;
  res = NULL;
  goto done;
oom:
  rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "tensor errors: out of memory");
done:
  for (int32_t i = 0; ob && i < b->output_count; i++) mi_array_destroy(ob[i]);
  for (int32_t i = 0; ox && i < x->output_count; i++) mi_array_destroy(ox[i]);
  for (int32_t t = 0; lo && hi && t < nt; t++) free(lo[t]), free(hi[t]);
  free(ob), free(ox), free(bi), free(xi), free(map), free(num), free(den), free(own), free(pc);
  free(lo), free(hi), free(scale), free(zp), free(res);
  mi_graph_destroy(x);
  mi_graph_destroy(b);
  mi_xf_config_destroy(sc);
  return rc;
}
