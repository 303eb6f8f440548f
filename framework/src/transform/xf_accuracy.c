/* xf_accuracy.c - output comparison of a transformed model with its original, per-layer
 * sensitivity. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transform/xf_internal.h"

static int32_t ref_runner(void *ctx, const mi_array_t *const *in, int32_t nin, mi_array_t **out,
                          int32_t nout, mi_error_t *err) {
  return mi_ref_run(ctx, in, nin, out, nout, err);
}

MI_API int32_t mi_xf_compare(const mi_graph_t *orig, const mi_graph_t *xf,
                             const mi_xf_samples_t *s, mi_xf_metrics_t *m, mi_error_t *err) {
  if (!orig || !xf || !s || !m) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "compare: NULL argument");
  if (xf->output_count != orig->output_count)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "compare: %d outputs against %d",
                     (int)orig->output_count, (int)xf->output_count);
  return mi_xf_compare_run(orig, ref_runner, (void *)xf, s, m, err);
}

MI_API int32_t mi_xf_compare_run(const mi_graph_t *orig, mi_xf_run_fn run, void *ctx,
                                 const mi_xf_samples_t *s, mi_xf_metrics_t *m, mi_error_t *err) {
  return mi_xf_compare_runs(orig, ref_runner, (void *)orig, run, ctx, s, m, err);
}

MI_API int32_t mi_xf_compare_runs(const mi_graph_t *orig, mi_xf_run_fn run_orig, void *ctx_orig,
                                  mi_xf_run_fn run, void *ctx, const mi_xf_samples_t *s,
                                  mi_xf_metrics_t *m, mi_error_t *err) {
  double d2 = 0, a2 = 0, b2 = 0, ab = 0, mx = 0, *od2 = NULL, *oa2 = NULL, *on = NULL;
  int64_t rows = 0, agree = 0;
  int32_t rc = MI_OK, no;
  mi_array_t **ya = NULL, **yb = NULL;
  if (!orig || !run_orig || !run || !s || !m)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "compare: NULL argument");
  memset(m, 0, sizeof *m);
  no = orig->output_count;
  ya = calloc((size_t)no + 1, sizeof *ya);
  yb = calloc((size_t)no + 1, sizeof *yb);
  od2 = calloc((size_t)no + 1, sizeof *od2);
  oa2 = calloc((size_t)no + 1, sizeof *oa2);
  on = calloc((size_t)no + 1, sizeof *on);
  if (!ya || !yb || !od2 || !oa2 || !on) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "compare: out of memory");
    goto done;
  }
  for (int32_t k = 0; k < s->sample_count && rc == MI_OK; k++) {
    const mi_array_t *const *in = (const mi_array_t *const *)s->inputs + (size_t)k * s->input_count;
    if ((rc = run_orig(ctx_orig, in, s->input_count, ya, no, err)) != MI_OK) break;
    if ((rc = run(ctx, in, s->input_count, yb, no, err)) != MI_OK) break;
    for (int32_t o = 0; o < no && rc == MI_OK; o++) {
      const mi_array_t *a = ya[o], *b = yb[o];
      int64_t n = mi_array_numel(a);
      if (!b) {
        rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "compare: output %d missing", (int)o);
        break;
      }
      if (a->dtype != MI_DTYPE_FLOAT32 || b->dtype != MI_DTYPE_FLOAT32 || mi_array_numel(b) != n) {
        rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "compare: output %d differs in dtype or size",
                       (int)o);
        break;
      }
      const float *pa = a->data, *pb = b->data;
      on[o] += (double)n;
      for (int64_t i = 0; i < n; i++) {
        double x = pa[i], y = pb[i], d = fabs(x - y);
        d2 += d * d;
        a2 += x * x;
        od2[o] += d * d;
        oa2[o] += x * x;
        b2 += y * y;
        ab += x * y;
        if (d > mx || isnan(d)) mx = d;
      }
      /* Top-1 on the first output when it is [rows, classes]. */
      if (o == 0 && a->rank == 2 && a->dims[1] > 1)
        for (int64_t r = 0; r < a->dims[0]; r++) {
          int64_t ia = 0, ib = 0, cls = a->dims[1];
          for (int64_t c = 1; c < cls; c++) {
            if (pa[r * cls + c] > pa[r * cls + ia]) ia = c;
            if (pb[r * cls + c] > pb[r * cls + ib]) ib = c;
          }
          rows++;
          agree += ia == ib;
        }
    }
    for (int32_t o = 0; o < no; o++) {
      mi_array_destroy(ya[o]);
      mi_array_destroy(yb[o]);
      ya[o] = yb[o] = NULL;
    }
  }
  if (rc == MI_OK) {
    m->samples = s->sample_count;
    m->rel_l2 = a2 > 0 ? sqrt(d2 / a2) : sqrt(d2);
    m->cosine = a2 > 0 && b2 > 0 ? ab / sqrt(a2 * b2) : (d2 == 0 ? 1.0 : 0.0);
    m->max_abs = mx;
    m->top1 = rows ? (double)agree / (double)rows : -1.0;
    m->worst_rel_l2 = 0;
    for (int32_t o = 0; o < no; o++) {
      double e = sqrt(od2[o]) / fmax(sqrt(oa2[o]), 1e-3 * sqrt(fmax(on[o], 1.0)));
      if (e > m->worst_rel_l2 || isnan(e)) m->worst_rel_l2 = e;
    }
  }
done:
  free(od2);
  free(oa2);
  free(on);
  free(ya);
  free(yb);
  return rc;
}

static int trivial(const mi_xf_layer_t *l) {
  return l->weights == MI_XF_FP32 && l->activations == MI_XF_FP32 && !(l->prune > 0.0);
}

/* The same passes as c, every layer FP32 and unpruned: what a sensitivity row sets one layer of,
 * and the shadow mi_xf_tensor_errors compares a model's tensors with. NULL when out of memory. */
mi_xf_config_t *mi__xf_fp32_shadow(const mi_xf_config_t *c) {
  mi_xf_config_t *one = mi_xf_config_clone(c);
  if (!one) return NULL;
  for (int32_t i = 0; i < one->op_count; i++) free(one->ops[i].name);
  for (int32_t i = 0; i < one->layer_count; i++) free(one->layers[i].name);
  one->op_count = one->layer_count = 0;
  one->defaults.weights = MI_XF_FP32;
  one->defaults.activations = MI_XF_FP32;
  one->defaults.prune = 0.0;
  return one;
}

MI_API int32_t mi_xf_sensitivity(const mi_graph_t *g, const mi_xf_config_t *c,
                                 const mi_xf_layer_t *probe, const mi_xf_samples_t *calib,
                                 const mi_xf_samples_t *eval, mi_xf_sensitivity_t **out,
                                 int32_t *count, mi_error_t *err) {
  int32_t rc = MI_OK, n_out = 0;
  mi_xf_sensitivity_t *res = NULL;
  mi_xf_config_t *one = NULL;
  mi_xf_means_t *means;
  if (out) *out = NULL;
  if (count) *count = 0;
  if (!g || !c || !eval || !out || !count)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "sensitivity: NULL argument");
  res = calloc((size_t)g->node_count + 1, sizeof *res);
  /* bias correction's means, one reference run for every row rather than one each */
  means = mi_xf_means_create();
  if (!res || !means) {
    free(res);
    mi_xf_means_destroy(means);
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "sensitivity: out of memory");
  }
  for (int32_t n = 0; n < g->node_count && rc == MI_OK; n++) {
    mi_xf_layer_t l;
    mi_graph_t *x = NULL;
    mi_xf_apply_opts_t opts = {.calib = calib ? calib : eval, .means = means};
    if (!mi__xf_is_weighted(g, n) || !g->nodes[n].name) continue;
    if (probe) l = *probe;
    else
      mi_xf_config_resolve(c, g, n, &l);
    l.set = MI_XF_SET_WEIGHTS | MI_XF_SET_SCALES | MI_XF_SET_ACTS | MI_XF_SET_PRUNE;
    if (trivial(&l)) continue;
    /* The same passes, every layer FP32 and unpruned, except this one. */
    if (!(one = mi__xf_fp32_shadow(c))) {
      rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "sensitivity: out of memory");
      break;
    }
    rc = mi_xf_config_set_layer(one, 0, g->nodes[n].name, &l, err);
    if (rc == MI_OK) rc = mi_xf_apply(g, one, &opts, &x, NULL, err);
    if (rc == MI_OK) rc = mi_xf_compare(g, x, eval, &res[n_out].metrics, err);
    if (rc == MI_OK) {
      snprintf(res[n_out].node, sizeof res[n_out].node, "%s", g->nodes[n].name);
      res[n_out].layer = l;
      n_out++;
    }
    mi_graph_destroy(x);
    mi_xf_config_destroy(one);
    one = NULL;
  }
  mi_xf_means_destroy(means);
  if (rc != MI_OK) {
    free(res);
    return rc;
  }
  *out = res;
  *count = n_out;
  return MI_OK;
}
