/* surrogate.c - mi_surrogate_t: picks a learner (GP on few points, XGBoost on many) and
 * dispatches to it. */
#include <stdlib.h>
#include <string.h>

#include "surrogate/surrogate_internal.h"

struct mi_surrogate {
  int32_t kind;
  mi__gp_t *gp;
  mi__xgb_t *xgb;
};

void mi_surrogate_options_default(mi_surrogate_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->kind = MI_SURROGATE_AUTO;
  o->ensemble = 8;
  o->rounds = 60;
  o->max_depth = 5;
  o->eta = 0.2;
  o->auto_threshold = 200;
  o->seed = 1;
}

int32_t mi_surrogate_fit(const double *X, const double *y, int32_t n, int32_t d,
                         const mi_surrogate_options_t *o, mi_surrogate_t **out,
                         mi_error_t *err) {
  mi_surrogate_options_t def;
  mi_surrogate_t *s;
  int32_t rc;
  if (out) *out = NULL;
  if (!X || !y || !out || n < 1 || d < 1)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "surrogate: data, >= 1 row and >= 1 feature required");
  if (!o) {
    mi_surrogate_options_default(&def);
    o = &def;
  }
  s = calloc(1, sizeof *s);
  if (!s) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "surrogate: out of memory");
  s->kind = o->kind;
  if (s->kind == MI_SURROGATE_AUTO)
    s->kind = n < (o->auto_threshold > 0 ? o->auto_threshold : 200) ? MI_SURROGATE_GP_ARD : MI_SURROGATE_XGB;
  if (s->kind == MI_SURROGATE_GP || s->kind == MI_SURROGATE_GP_ARD)
    rc = mi__gp_fit(X, y, n, d, s->kind == MI_SURROGATE_GP_ARD, &s->gp, err);
  else if (s->kind == MI_SURROGATE_XGB || s->kind == MI_SURROGATE_XGB_RANK)
    rc = mi__xgb_fit(X, y, n, d, o, s->kind == MI_SURROGATE_XGB_RANK, &s->xgb, err);
  else
    rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "surrogate: unknown learner %d", (int)s->kind);
  if (rc != MI_OK) {
    mi_surrogate_destroy(s);
    return rc;
  }
  *out = s;
  return MI_OK;
}

int32_t mi_surrogate_predict(const mi_surrogate_t *s, const double *X, int32_t m, double *mean,
                             double *std, mi_error_t *err) {
  if (!s || !X || !mean || m < 0)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "surrogate predict: bad arguments");
  if (m == 0) return MI_OK;
  if (s->gp) return mi__gp_predict(s->gp, X, m, mean, std, err);
  return mi__xgb_predict(s->xgb, X, m, mean, std, err);
}

int32_t mi_surrogate_kind_used(const mi_surrogate_t *s) { return s ? s->kind : -1; }

void mi_surrogate_destroy(mi_surrogate_t *s) {
  if (!s) return;
  mi__gp_destroy(s->gp);
  mi__xgb_destroy(s->xgb);
  free(s);
}
