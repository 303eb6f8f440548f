/* encode.c - configurations and tasks as feature vectors for the surrogate and retrieval. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meta_internal.h"

/* A dimension is numeric when every label parses as a number: then one ordinal feature
 * carries its order; otherwise (kernel variants, precisions) a one-hot block. */
static int numeric_dim(const mi_space_t *s, int32_t d) {
  if (mi_space_dim_kind(s, d) == MI_DIM_VARIANT) return 0;
  for (int32_t v = 0; v < mi_space_dim_size(s, d); v++) {
    const char *l = mi_space_dim_label(s, d, v);
    char *end = NULL;
    if (!l || !l[0]) return 0;
    (void)strtod(l, &end);
    if (!end || *end) return 0;
  }
  return 1;
}

static int32_t dim_width(const mi_space_t *s, int32_t d) {
  int32_t n = mi_space_dim_size(s, d);
  if (n <= 1) return 0;
  return numeric_dim(s, d) ? 1 : n;
}

int32_t mi_meta_feature_count(const mi_space_t *s) {
  int32_t c = 0;
  if (!s) return 0;
  for (int32_t d = 0; d < mi_space_dim_count(s); d++) c += dim_width(s, d);
  return c > 0 ? c : 1;
}

void mi_meta_encode(const mi_space_t *s, const int32_t *pt, double *x) {
  int32_t c = 0;
  x[0] = 0;
  for (int32_t d = 0; d < mi_space_dim_count(s); d++) {
    int32_t n = mi_space_dim_size(s, d), w = dim_width(s, d);
    if (w == 0) continue;
    if (w == 1) {
      x[c++] = (double)pt[d] / (double)(n - 1);
    } else {
      for (int32_t v = 0; v < n; v++) x[c + v] = v == pt[d] ? 1 : 0;
      c += n;
    }
  }
}

/* Op families of the op-mix histogram (and of a layer's features, layer.c): what dominates a
 * model's cost profile. 0..5, or 6 for any other op. */
int mi__meta_op_family(const char *op) {
  static const char *const fam[][6] = {
      {"Conv", "ConvTranspose", NULL},
      {"Gemm", "MatMul", NULL},
      {"Relu", "Clip", "HardSwish", "HardSigmoid", "Sigmoid", NULL},
      {"Add", "Mul", "Sub", "Div", NULL},
      {"BatchNormalization", "LayerNormalization", "Softmax", NULL},
      {"MaxPool", "AveragePool", "GlobalAveragePool", "ReduceMean", NULL},
  };
  for (int f = 0; f < 6; f++)
    for (int i = 0; fam[f][i]; i++)
      if (strcmp(op, fam[f][i]) == 0) return f;
  return 6;
}

void mi_meta_describe(const mi_model_features_t *mf, const mi_device_fingerprint_t *fp,
                      double desc[MI_META_DESC_SIZE]) {
  memset(desc, 0, sizeof(double) * MI_META_DESC_SIZE);
  if (mf) {
    double total = 0;
    desc[0] = log10(1.0 + mf->layer_count);
    desc[1] = log10(1.0 + mf->flops);
    desc[2] = log10(1.0 + (double)mf->params);
    desc[3] = log10(1.0 + (double)mf->max_width);
    desc[4] = log10(1.0 + (double)mf->input_scale);
    desc[5] = log10(1.0 + (double)mf->batch);
    for (int32_t i = 0; i < mf->op_kinds && i < MI_FEATURE_MAX_OPS; i++) total += mf->op_counts[i];
    for (int32_t i = 0; i < mf->op_kinds && i < MI_FEATURE_MAX_OPS; i++)
      desc[6 + mi__meta_op_family(mf->op_names[i])] += total > 0 ? mf->op_counts[i] / total : 0;
  }
  if (fp)
    for (int i = 0; i < 4 + MI_PROBE_COUNT && MI_META_FP_OFFSET + i < MI_META_DESC_SIZE; i++)
      desc[MI_META_FP_OFFSET + i] = fp->vector[i];
}
