/* blis_nms.c - blis-cpu's NonMaxSuppression (detectors exported with their NMS): per batch and
 * class, the greedy selection of the reference (framework/src/ref/ref_nms.c), the (batch,
 * class) pairs on the pool, and the rows it selected reported to the host, whose count is data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blis_internal.h"

typedef struct nms_state {
  int32_t boxes, scores, max_out, iou, score_thr, y; /* tensor indices; -1: omitted */
  int32_t center;
  int64_t B, C, S, room; /* room: the output's rows as prepared */
  char name[64];
} nms_state_t;

typedef struct cand {
  float score;
  int64_t box;
} cand_t;

/* Whether a comes before b: higher score first, equal scores by lower box index, as the
 * reference and ONNX Runtime order them (a total order: any selection method gives the same). */
static inline int before(const cand_t *a, const cand_t *b) {
  return a->score > b->score || (a->score == b->score && a->box < b->box);
}

static void sift_down(cand_t *h, int64_t n, int64_t i) {
  cand_t v = h[i];
  for (;;) {
    int64_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && before(&h[c + 1], &h[c])) c++;
    if (!before(&h[c], &v)) break;
    h[i] = h[c];
    i = c;
  }
  h[i] = v;
}

/* The candidates as a heap whose root comes first: popped one at a time, only as many as the
 * greedy pass looks at before it has its boxes (a detector's tail keeps 100 of thousands), where
 * a full sort ordered them all. */
static void heapify(cand_t *h, int64_t n) {
  for (int64_t i = n / 2 - 1; i >= 0; i--) sift_down(h, n, i);
}

static cand_t pop(cand_t *h, int64_t *n) {
  cand_t top = h[0];
  h[0] = h[--*n];
  if (*n > 1) sift_down(h, *n, 0);
  return top;
}

/* One run's work: the boxes as corners with their areas, and per (batch, class) pair the boxes
 * it kept (at most `per` of them) and how many. */
typedef struct nms_run {
  const nms_state_t *st;
  const float *scores;
  float *corners, *area;
  int64_t *kept, *count, per;
  float iou, sthr;
  int has_sthr;
  int failed; /* a part's scratch could not be allocated */
} nms_run_t;

/* Corners (y1, x1, y2, x2) of every box, in the reference's arithmetic, and their areas. */
static void corners_part(void *arg, int64_t i0, int64_t i1) {
  nms_run_t *r = arg;
  for (int64_t i = i0; i < i1; i++) {
    float *c = r->corners + i * 4;
    float b0 = c[0], b1 = c[1], b2 = c[2], b3 = c[3]; /* the raw box, copied in by run_nms */
    if (r->st->center) {
      c[0] = b1 - b3 / 2, c[1] = b0 - b2 / 2;
      c[2] = b1 + b3 / 2, c[3] = b0 + b2 / 2;
    } else {
      c[0] = fminf(b0, b2), c[1] = fminf(b1, b3);
      c[2] = fmaxf(b0, b2), c[3] = fmaxf(b1, b3);
    }
    r->area[i] = (c[2] - c[0]) * (c[3] - c[1]);
  }
}

/* Whether box q (corners, area aq > 0) overlaps one of the nk kept boxes (structure of arrays)
 * by more than iou. Both areas positive means no corner is NaN, where the reference's fminf and
 * fmaxf and plain compares agree; a kept box of no area (or NaN) suppresses nothing, as in the
 * reference. No early exit: the loop over the kept few runs as vectors. */
static int overlaps(const float *const k[5], int64_t nk, const float *q, float aq, float iou) {
  int hit = 0;
  for (int64_t j = 0; j < nk; j++) {
    float y1 = k[2][j] < q[2] ? k[2][j] : q[2], y0 = k[0][j] > q[0] ? k[0][j] : q[0];
    float x1 = k[3][j] < q[3] ? k[3][j] : q[3], x0 = k[1][j] > q[1] ? k[1][j] : q[1];
    float ih = y1 - y0, iw = x1 - x0, inter = ih * iw;
    hit |= (k[4][j] > 0) & (ih > 0) & (iw > 0) & (inter / (k[4][j] + aq - inter) > iou);
  }
  return hit;
}

/* Items are (batch, class) pairs: each heaps its candidates and keeps greedily. */
static void select_part(void *arg, int64_t p0, int64_t p1) {
  nms_run_t *r = arg;
  const nms_state_t *st = r->st;
  cand_t *cand = malloc((size_t)(st->S ? st->S : 1) * sizeof *cand);
  float *soa = malloc((size_t)(r->per ? r->per : 1) * 5 * sizeof *soa);
  if (!cand || !soa) {
    free(cand);
    free(soa);
    r->failed = 1;
    return;
  }
  float *k[5] = {soa, soa + r->per, soa + 2 * r->per, soa + 3 * r->per, soa + 4 * r->per};
  for (int64_t pair = p0; pair < p1; pair++) {
    int64_t b = pair / st->C, nc = 0, nk = 0;
    const float *s = r->scores + pair * st->S, *cb = r->corners + b * st->S * 4, *ab = r->area + b * st->S;
    int64_t *kept = r->kept + pair * r->per;
    for (int64_t i = 0; i < st->S; i++)
      if (s[i] == s[i] && (!r->has_sthr || s[i] > r->sthr)) /* NaN: never */
        cand[nc].score = s[i], cand[nc++].box = i;
    heapify(cand, nc);
    while (nc > 0 && nk < r->per) {
      cand_t next = pop(cand, &nc);
      const float *q = cb + next.box * 4;
      float aq = ab[next.box];
      if (aq > 0 && overlaps((const float *const *)k, nk, q, aq, r->iou)) continue;
      for (int c = 0; c < 4; c++) k[c][nk] = q[c];
      k[4][nk] = aq;
      kept[nk++] = next.box;
    }
    r->count[pair] = nk;
  }
  free(cand);
  free(soa);
}

static int32_t nms_fail(mi_error_t *err, const nms_state_t *st, const char *what) {
  return mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT, "blis-cpu: NonMaxSuppression '%s': %s", st->name, what);
}

static int32_t run_nms(const mi__blis_step_t *s, void *const *t, const mi__blis_env_t *env, mi_error_t *err) {
  const nms_state_t *st = s->state;
  nms_run_t r;
  int64_t max_out = 0, total = 0, pairs = st->B * st->C;
  int32_t rc = MI_OK;
  memset(&r, 0, sizeof r);
  r.st = st;
  r.scores = t[st->scores];
  if (st->max_out >= 0) max_out = *(const int64_t *)t[st->max_out];
  if (st->iou >= 0) r.iou = *(const float *)t[st->iou];
  if (st->score_thr >= 0) r.sthr = *(const float *)t[st->score_thr], r.has_sthr = 1;
  if (!(r.iou >= 0.0f && r.iou <= 1.0f)) return nms_fail(err, st, "iou_threshold is outside [0, 1]");
  r.per = max_out < 0 ? 0 : max_out < st->S ? max_out
                                            : st->S;
  r.corners = malloc((size_t)(st->B * st->S * 4 + 1) * sizeof *r.corners);
  r.area = malloc((size_t)(st->B * st->S + 1) * sizeof *r.area);
  r.kept = malloc((size_t)(pairs * r.per + 1) * sizeof *r.kept);
  r.count = calloc((size_t)pairs + 1, sizeof *r.count);
  if (!r.corners || !r.area || !r.kept || !r.count) {
    rc = mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: NonMaxSuppression '%s': out of memory", st->name);
    goto done;
  }
  if (r.per > 0) {
    memcpy(r.corners, t[st->boxes], (size_t)(st->B * st->S * 4) * sizeof *r.corners);
    mi__blis_parallel(env, st->B * st->S, 1, 16, corners_part, &r);
    /* a pair's work: its scan and heap, and up to per x kept comparisons (the kept few, not all S) */
    mi__blis_parallel(env, pairs, 1, st->S * 8 + r.per * r.per, select_part, &r);
    if (r.failed) {
      rc = mi_sdk_errorf(err, MI_ERR_OUT_OF_MEMORY, "blis-cpu: NonMaxSuppression '%s': out of memory", st->name);
      goto done;
    }
  }
  for (int64_t p = 0; p < pairs; p++) total += r.count[p];
  /* The output has room for st->room rows: the session gives an output only the caller reads
   * room for every box the node can select; one a node reads has the rows fixed when the
   * session was created, which this run must match. */
  if (total > st->room || (total != st->room && !env->rows_ok)) {
    rc = mi_sdk_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "blis-cpu: NonMaxSuppression '%s': selected %lld boxes, the output was prepared for %lld "
                       "(shapes that depend on input values are fixed when the session is created)",
                       st->name, (long long)total, (long long)st->room);
    goto done;
  }
  {
    int64_t *y = t[st->y], row = 0;
    for (int64_t p = 0; p < pairs; p++)
      for (int64_t i = 0; i < r.count[p]; i++, row++) {
        y[row * 3] = p / st->C;
        y[row * 3 + 1] = p % st->C;
        y[row * 3 + 2] = r.kept[p * r.per + i];
      }
  }
  *env->rows_tensor = st->y;
  *env->rows = total;
done:
  free(r.corners);
  free(r.area);
  free(r.kept);
  free(r.count);
  return rc;
}

/* A scalar input: omitted (absent or empty) gives -1; else its index, when it has `dtype`. */
static int scalar_in(mi__blis_prep_t *p, const mi_node_desc_t *n, int32_t i, int32_t dtype, int32_t *out) {
  const mi_tensor_desc_t *t = mi__blis_tensor(p, mi__blis_in(n, i));
  *out = -1;
  if (!t || mi_sdk_numel(t) == 0) return 1;
  if (t->dtype != dtype || mi_sdk_numel(t) != 1) return 0;
  *out = mi__blis_in(n, i);
  return 1;
}

int32_t mi__blis_prep_nms(mi__blis_prep_t *p, mi__blis_step_t *s, mi_error_t *err) {
  const mi_node_desc_t *n = mi__blis_node(p, 0);
  const mi_tensor_desc_t *bx = mi__blis_tensor(p, mi__blis_in(n, 0)), *sc = mi__blis_tensor(p, mi__blis_in(n, 1));
  const mi_tensor_desc_t *y = mi__blis_tensor(p, mi__blis_out(n, 0));
  int64_t center = mi_sdk_attr_int(n, "center_point_box", 0);
  nms_state_t *st;
  if (!bx || !sc || bx->dtype != MI_DTYPE_FLOAT32 || sc->dtype != MI_DTYPE_FLOAT32 || bx->rank != 3 ||
      bx->dims[2] != 4 || sc->rank != 3 || sc->dims[0] != bx->dims[0] || sc->dims[2] != bx->dims[1])
    return mi__blis_unsupported(err, n, "boxes must be FLOAT32 [batches, boxes, 4] and scores [batches, classes, boxes]");
  if (!y || y->dtype != MI_DTYPE_INT64 || y->rank != 2 || y->dims[1] != 3)
    return mi__blis_unsupported(err, n, "selected_indices must be INT64 [N, 3]");
  if (center != 0 && center != 1) return mi__blis_unsupported(err, n, "center_point_box must be 0 or 1");
  if (!(st = mi__blis_state_new(p, s, sizeof *st, err))) return MI_ERR_OUT_OF_MEMORY;
  if (!scalar_in(p, n, 2, MI_DTYPE_INT64, &st->max_out) || !scalar_in(p, n, 3, MI_DTYPE_FLOAT32, &st->iou) ||
      !scalar_in(p, n, 4, MI_DTYPE_FLOAT32, &st->score_thr))
    return mi__blis_unsupported(err, n, "max_output_boxes_per_class must be one INT64, the thresholds one FLOAT32 each");
  st->boxes = mi__blis_in(n, 0);
  st->scores = mi__blis_in(n, 1);
  st->y = mi__blis_out(n, 0);
  st->center = (int32_t)center;
  st->B = bx->dims[0];
  st->S = bx->dims[1];
  st->C = sc->dims[1];
  st->room = y->dims[0];
  snprintf(st->name, sizeof st->name, "%s", n->name ? n->name : "");
  s->run = run_nms;
  return MI_OK;
}

/* Where the ops of this file and blis_seqops.c / blis_roialign.c take a runtime tensor other than
 * FLOAT32: (op, input slot) and (op, output slot), slot -1 ending the list. */
static const struct {
  const char *op;
  int32_t in[3], out[2];
} int_slots[] = {
    {"NonMaxSuppression", {2, -1}, {0, -1}}, /* max_output_boxes_per_class; selected_indices */
    {"RoiAlign", {2, -1}, {-1}},             /* batch_indices */
    {"TopK", {1, -1}, {1, -1}},              /* K; indices */
    {"ArgMax", {-1}, {0, -1}},               /* the indices (blis_select.c) */
    {"ArgMin", {-1}, {0, -1}},
    {"Compress", {0, 1, -1}, {0, -1}},        /* INT64 data, BOOL condition */
    {"ReverseSequence", {0, 1, -1}, {0, -1}}, /* INT64 data, sequence_lens */
};

static int in_slots(const int32_t *slots, int32_t j) {
  for (; *slots >= 0; slots++)
    if (*slots == j) return 1;
  return 0;
}

int mi__blis_vision_int(const mi_kernel_desc_t *d, int32_t t) {
  int32_t i, j, seen = 0;
  for (i = 0; i < d->node_count; i++) {
    const mi_node_desc_t *n = d->nodes[i];
    int32_t k = 0, nk = (int32_t)(sizeof int_slots / sizeof int_slots[0]);
    while (k < nk && strcmp(int_slots[k].op, n->op_type)) k++;
    for (j = 0; j < n->output_count; j++)
      if (n->outputs[j] == t) {
        if (k == nk || !in_slots(int_slots[k].out, j)) return 0;
        seen = 1;
      }
    for (j = 0; j < n->input_count; j++)
      if (n->inputs[j] == t) {
        if (k == nk || !in_slots(int_slots[k].in, j)) return 0;
        seen = 1;
      }
  }
  return seen;
}
