/* ref_nms.c - reference NonMaxSuppression: per batch and class, greedy selection by score of
 * boxes whose overlap with every box already kept is at most iou_threshold (the detectors
 * exported with their NMS). */
#include <math.h>
#include <stdlib.h>

#include "ref/ref_ops.h"

#define F32 MI_DTYPE_BIT(MI_DTYPE_FLOAT32)

typedef struct cand {
  float score;
  int64_t box;
} cand_t;

/* Higher score first; equal scores keep the lower box index first (a stable order). */
static int by_score(const void *a, const void *b) {
  const cand_t *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;
  return (x->box > y->box) - (x->box < y->box);
}

/* A box as its corners (y1, x1, y2, x2 with y1 <= y2, x1 <= x2). */
static void corners(const float *b, int center, float *c) {
  if (center) { /* x_center, y_center, width, height */
    c[0] = b[1] - b[3] / 2, c[1] = b[0] - b[2] / 2;
    c[2] = b[1] + b[3] / 2, c[3] = b[0] + b[2] / 2;
  } else { /* any two diagonal corners */
    c[0] = fminf(b[0], b[2]), c[1] = fminf(b[1], b[3]);
    c[2] = fmaxf(b[0], b[2]), c[3] = fmaxf(b[1], b[3]);
  }
}

/* Whether a and b (corners) overlap by more than thr (intersection over union). */
static int suppresses(const float *a, const float *b, float thr) {
  float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
  if (area_a <= 0 || area_b <= 0) return 0;
  float ih = fminf(a[2], b[2]) - fmaxf(a[0], b[0]), iw = fminf(a[3], b[3]) - fmaxf(a[1], b[1]);
  if (ih <= 0 || iw <= 0) return 0;
  float inter = ih * iw;
  return inter / (area_a + area_b - inter) > thr;
}

/* Reads the optional scalar inputs; absent ones keep the defaults. */
static int32_t read_params(mi__ref_call_t *c, int64_t *max_out, float *iou, float *score,
                           int *has_score) {
  const mi_array_t *a;
  int32_t rc, n;
  *max_out = 0, *iou = 0, *score = 0, *has_score = 0;
  if ((a = mi__ref_in(c, 2)) && mi_array_numel(a) > 0) {
    if (mi_array_numel(a) != 1)
      return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "max_output_boxes_per_class must be one value");
    if ((rc = mi__ref_read_ints(c, a, "max_output_boxes_per_class", max_out, 1, &n)) != MI_OK)
      return rc;
    if (*max_out < 0) *max_out = 0;
  }
  if ((a = mi__ref_in(c, 3)) && mi_array_numel(a) > 0 &&
      (rc = mi__ref_read_float(c, a, "iou_threshold", iou)) != MI_OK)
    return rc;
  if (!(*iou >= 0.0f && *iou <= 1.0f))
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "iou_threshold %g is outside [0, 1]",
                        (double)*iou);
  if ((a = mi__ref_in(c, 4)) && mi_array_numel(a) > 0) {
    if ((rc = mi__ref_read_float(c, a, "score_threshold", score)) != MI_OK) return rc;
    *has_score = 1;
  }
  return MI_OK;
}

int32_t mi__ref_nms(mi__ref_call_t *c) {
  const mi_array_t *bx, *sc;
  mi_array_t *y;
  int32_t rc = MI_OK;
  int64_t max_out, dims[2] = {0, 3}, count = 0;
  float iou, sthr;
  int has_score, center = (int)mi_node_attr_int(c->node, "center_point_box", 0);
  if ((rc = mi__ref_since(c)) != MI_OK) return rc;
  if ((rc = mi__ref_need(c, 0, F32, &bx)) != MI_OK || (rc = mi__ref_need(c, 1, F32, &sc)) != MI_OK)
    return rc;
  if (center != 0 && center != 1)
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT, "center_point_box must be 0 or 1, got %d",
                        center);
  if (bx->rank != 3 || bx->dims[2] != 4 || sc->rank != 3 || sc->dims[0] != bx->dims[0] ||
      sc->dims[2] != bx->dims[1])
    return mi__ref_fail(c, MI_ERR_INVALID_ARGUMENT,
                        "boxes must be [batches, boxes, 4] and scores [batches, classes, boxes]");
  if ((rc = read_params(c, &max_out, &iou, &sthr, &has_score)) != MI_OK) return rc;
  int64_t B = bx->dims[0], K = sc->dims[1], S = bx->dims[1];
  int64_t cap = B * K * (max_out < S ? max_out : S);
  int64_t *sel = malloc((size_t)(cap ? cap : 1) * 3 * sizeof *sel);
  cand_t *cand = malloc((size_t)(S ? S : 1) * sizeof *cand);
  float *box = malloc((size_t)(S ? S : 1) * 4 * sizeof *box);
  int64_t *kept = malloc((size_t)(S ? S : 1) * sizeof *kept);
  if (!sel || !cand || !box || !kept) {
    rc = mi__ref_fail(c, MI_ERR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (int64_t b = 0; b < B && max_out > 0; b++) {
    for (int64_t i = 0; i < S; i++) corners((const float *)bx->data + (b * S + i) * 4, center, box + i * 4);
    for (int64_t k = 0; k < K; k++) {
      const float *s = (const float *)sc->data + (b * K + k) * S;
      int64_t nc = 0, nk = 0;
      for (int64_t i = 0; i < S; i++)
        if (s[i] == s[i] && (!has_score || s[i] > sthr)) /* NaN: never */
          cand[nc].score = s[i], cand[nc++].box = i;
      qsort(cand, (size_t)nc, sizeof *cand, by_score);
      for (int64_t i = 0; i < nc && nk < max_out; i++) {
        int keep = 1;
        for (int64_t j = 0; j < nk && keep; j++)
          keep = !suppresses(box + kept[j] * 4, box + cand[i].box * 4, iou);
        if (!keep) continue;
        kept[nk++] = cand[i].box;
        sel[count * 3] = b, sel[count * 3 + 1] = k, sel[count * 3 + 2] = cand[i].box;
        count++;
      }
    }
  }
  dims[0] = count;
  if ((rc = mi__ref_make_out(c, 0, MI_DTYPE_INT64, 2, dims, &y)) == MI_OK)
    for (int64_t i = 0; i < count * 3; i++) ((int64_t *)y->data)[i] = sel[i];
done:
  free(sel);
  free(cand);
  free(box);
  free(kept);
  return rc;
}
