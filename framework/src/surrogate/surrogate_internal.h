/* surrogate_internal.h - the learners behind mi_surrogate_t. */
#ifndef MI_SURROGATE_INTERNAL_H
#define MI_SURROGATE_INTERNAL_H

#include "metainfer/mi_meta.h"

/* The learners' fits set *out to the model they build before they start, so that a failed fit
 * leaves what it built to the caller, which destroys it (mi_surrogate_fit destroys the whole
 * surrogate) rather than each learner having its own unwinding. */
typedef struct mi__gp mi__gp_t;
/* use_ard: one relevance weight per feature by marginal likelihood (MI_SURROGATE_GP_ARD). */
int32_t mi__gp_fit(const double *X, const double *y, int32_t n, int32_t d, int use_ard,
                   mi__gp_t **out, mi_error_t *err);
int32_t mi__gp_predict(const mi__gp_t *g, const double *X, int32_t m, double *mean,
                       double *std, mi_error_t *err);
void mi__gp_destroy(mi__gp_t *g);

typedef struct mi__xgb mi__xgb_t;
int32_t mi__xgb_fit(const double *X, const double *y, int32_t n, int32_t d,
                    const mi_surrogate_options_t *o, int rank, mi__xgb_t **out,
                    mi_error_t *err);
int32_t mi__xgb_predict(const mi__xgb_t *x, const double *X, int32_t m, double *mean,
                        double *std, mi_error_t *err);
void mi__xgb_destroy(mi__xgb_t *x);

#endif
