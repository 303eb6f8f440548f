/* describe_json.c - task descriptors from the JSON the history stores with a task (model
 * features) and a device (fingerprint), so past tasks of other models and devices can be
 * retrieved by similarity. Reads only the two flat formats the feature module writes. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_meta.h"

static const char *skip_ws(const char *p) {
  while (*p && isspace((unsigned char)*p)) p++;
  return p;
}

/* The position just after `"key"` and its colon at the top level of a flat object, or NULL.
 * Keys inside string values cannot match: a match must follow '{' or ','. */
static const char *after_key(const char *js, const char *key) {
  size_t kl = strlen(key);
  for (const char *p = strchr(js, '"'); p; p = strchr(p + 1, '"')) {
    const char *q = p - 1;
    while (q >= js && isspace((unsigned char)*q)) q--;
    if (q < js || (*q != '{' && *q != ',')) continue;
    if (strncmp(p + 1, key, kl) || p[1 + kl] != '"') continue;
    q = skip_ws(p + 2 + kl);
    if (*q == ':') return skip_ws(q + 1);
  }
  return NULL;
}

static int read_num(const char *js, const char *key, double *out) {
  const char *p = after_key(js, key);
  char *end = NULL;
  double v;
  if (!p) return 0;
  v = strtod(p, &end);
  if (end == p) return 0; /* null: a counter without a sample */
  *out = v;
  return 1;
}

/* Model features: sizes and the op histogram ("ops":{"Conv":3,...}). */
static int read_features(const char *js, mi_model_features_t *mf) {
  const char *p;
  double v;
  int ok = 0;
  memset(mf, 0, sizeof *mf);
  if (read_num(js, "layers", &v)) mf->layer_count = (int32_t)v, ok = 1;
  if (read_num(js, "flops", &v)) mf->flops = v, ok = 1;
  if (read_num(js, "params", &v)) mf->params = (int64_t)v;
  if (read_num(js, "max_width", &v)) mf->max_width = (int64_t)v;
  if (read_num(js, "input_scale", &v)) mf->input_scale = (int64_t)v;
  if (read_num(js, "batch", &v)) mf->batch = (int64_t)v;
  p = after_key(js, "ops");
  if (p && *p == '{') {
    p = skip_ws(p + 1);
    while (*p == '"' && mf->op_kinds < MI_FEATURE_MAX_OPS) {
      const char *e = strchr(p + 1, '"');
      char *end = NULL;
      size_t n;
      long c;
      if (!e) break;
      n = (size_t)(e - p - 1);
      if (n >= sizeof mf->op_names[0]) n = sizeof mf->op_names[0] - 1;
      memcpy(mf->op_names[mf->op_kinds], p + 1, n);
      mf->op_names[mf->op_kinds][n] = 0;
      p = skip_ws(e + 1);
      if (*p != ':') break;
      c = strtol(p + 1, &end, 10);
      if (end == p + 1) break;
      mf->op_counts[mf->op_kinds++] = (int32_t)c;
      p = skip_ws(end);
      if (*p == ',') p = skip_ws(p + 1);
    }
  }
  return ok;
}

/* The fingerprint's similarity vector ("vector":[...]); null entries stay 0. */
static int read_vector(const char *js, mi_device_fingerprint_t *fp) {
  const char *p = after_key(js, "vector");
  int n = 0, any = 0;
  memset(fp, 0, sizeof *fp);
  if (!p || *p != '[') return 0;
  p = skip_ws(p + 1);
  while (*p && *p != ']' && n < (int)(sizeof fp->vector / sizeof fp->vector[0])) {
    char *end = NULL;
    double v = strtod(p, &end);
    if (end == p) {
      if (strncmp(p, "null", 4)) break;
      end = (char *)p + 4;
      v = 0;
    } else {
      any = 1;
    }
    fp->vector[n++] = isfinite(v) ? v : 0;
    p = skip_ws(end);
    if (*p == ',') p = skip_ws(p + 1);
  }
  return any;
}

int32_t mi_meta_describe_json(const char *features_json, const char *fingerprint_json,
                              double desc[MI_META_DESC_SIZE]) {
  mi_model_features_t *mf = calloc(1, sizeof *mf);
  mi_device_fingerprint_t *fp = calloc(1, sizeof *fp);
  int32_t got = 0;
  if (!mf || !fp) {
    free(mf);
    free(fp);
    memset(desc, 0, sizeof(double) * MI_META_DESC_SIZE);
    return 0;
  }
  if (features_json && read_features(features_json, mf)) got |= 1;
  if (fingerprint_json && read_vector(fingerprint_json, fp)) got |= 2;
  mi_meta_describe(got & 1 ? mf : NULL, got & 2 ? fp : NULL, desc);
  free(mf);
  free(fp);
  return got;
}
