/* blis_qresize.c - the passes of a nearest Resize on INT8/UINT8 codes (ONNX Runtime's QOperator
 * and QDQ models resize codes between QLinear ops): the float kernel's index tables
 * (blis_resize.c, the reference's taps for every coordinate and nearest mode), each output
 * position a copy of one input position, so the codes are the reference's (which resizes the
 * codes as floats and picks, framework/src/ref/ref_resize.c) byte for byte. */
#include <string.h>

#include "blis_internal.h"

typedef struct qr_task {
  const mi__blis_rpass_t *ps, *pw; /* the pass (fused: the rows' pass and the innermost one) */
  const uint8_t *x;
  uint8_t *y;
} qr_task_t;

static inline void gather(const int64_t *i0, const uint8_t *xr, uint8_t *yr, int64_t n) {
  for (int64_t j = 0; j < n; j++) yr[j] = xr[i0[j]];
}

/* Items [b, e) of one pass: rows (o, j) of `inner` bytes copied from input row (o, i0[j]); a pass
 * of the innermost axis (inner 1) takes whole blocks, gathered. */
static void pass_part(void *arg, int64_t b, int64_t e) {
  const qr_task_t *t = arg;
  const mi__blis_rpass_t *ps = t->ps;
  if (ps->inner == 1) {
    for (int64_t o = b; o < e; o++) gather(ps->i0, t->x + o * ps->in, t->y + o * ps->out, ps->out);
    return;
  }
  for (int64_t r = b; r < e; r++) {
    int64_t o = r / ps->out, j = r % ps->out;
    memcpy(t->y + r * ps->inner, t->x + (o * ps->in + ps->i0[j]) * ps->inner, (size_t)ps->inner);
  }
}

/* Output rows [b, e) of the rows' pass ps, each gathered through the innermost pass pw. */
static void fused_part(void *arg, int64_t b, int64_t e) {
  const qr_task_t *t = arg;
  const mi__blis_rpass_t *ps = t->ps, *pw = t->pw;
  for (int64_t r = b; r < e; r++) {
    int64_t o = r / ps->out, j = r % ps->out;
    gather(pw->i0, t->x + (o * ps->in + ps->i0[j]) * ps->inner, t->y + r * pw->out, pw->out);
  }
}

int32_t mi__blis_qresize_run(const mi__blis_rpass_t *pass, int32_t npass, int32_t fused, uint8_t *s0, uint8_t *s1,
                             const uint8_t *x, uint8_t *y, uint64_t bytes, const mi__blis_env_t *env) {
  qr_task_t t;
  int32_t last = npass - (fused ? 2 : 0);
  if (npass == 0) {
    if (y != x) memcpy(y, x, (size_t)bytes);
    return MI_OK;
  }
  t.x = x;
  t.pw = NULL;
  for (int32_t i = 0; i < last; i++) {
    t.ps = &pass[i];
    t.y = i == npass - 1 ? y : (i & 1) ? s1
                                       : s0;
    if (t.ps->inner == 1) mi__blis_parallel(env, t.ps->outer, 1, t.ps->out, pass_part, &t);
    else
      mi__blis_parallel(env, t.ps->outer * t.ps->out, 1, t.ps->inner, pass_part, &t);
    t.x = t.y;
  }
  if (fused) {
    t.ps = &pass[npass - 2];
    t.pw = &pass[npass - 1];
    t.y = y;
    mi__blis_parallel(env, t.ps->outer * t.ps->out, 1, t.pw->out, fused_part, &t);
  }
  return MI_OK;
}
