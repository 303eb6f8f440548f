/* ltask_knob.c - the knob stage of layer-task tuning. The variant stage (ltask_tune.c) tries each
 * variant at its declared knobs; the blocks, work-group sizes and vector widths a variant reads
 * are where most of a kernel's speed lies on a given shape (on a CPU OpenCL device the 1x1
 * convolutions run 2-2.5x faster at other blocks than the declared ones, docs/tuning.md), and
 * their cross product is far too large to measure. So each task climbs from its fastest choice
 * that has knobs (a conv at auto has those of its stand-in, ltask_auto.c), one knob one step
 * (the neighbouring value of its domain) per round, every task of the model in the same
 * whole-model measurement. What a step did is kept per kernel class
 * (op, window, stride, groups, depthwise, precision: the shape features of the task key): a step
 * that sped up one 1x1 convolution is tried first on the next, and a step that just paid is
 * tried again (a block that helped at 8 may help more at 16); a step that cost the class on
 * average over two tasks or more is not taken again. A task stops at a local optimum;
 * the stage stops when its rounds or its seconds are spent. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task/ltask_internal.h"

#define MOVES_MAX 48
/* A step is taken only when the task measured this much faster: per-layer times from one
 * whole-model run carry a few percent of noise, and a step taken on noise walks away. */
#define ACCEPT 0.97

typedef struct {
  char text[160]; /* kernel class | which conv of a unit | knob | direction */
  double sum;     /* log(time before / time after) of the steps measured */
  int32_t n;
} tally_t;

typedef struct {
  tally_t *t;
  int32_t n, cap;
} tallies_t;

typedef struct {
  int active;
  char *center; /* the choice the steps start from (owned) */
  double center_s;
  char *mv[MOVES_MAX]; /* the steps left to try, in order */
  int32_t key[MOVES_MAX];
  uint8_t far[MOVES_MAX]; /* a named knob's value that is not a neighbour: tried after the rest */
  int32_t nm, next;
  int32_t last; /* the tally key of the step that made the centre, -1 none */
} kstate_t;

/* The tally index of a step (added when new), -1 when out of memory. */
static int32_t tally_key(tallies_t *ta, const mi_ltask_t *k, int j, const char *knob, const char *step) {
  char text[160];
  const double *f = k->features + MI_LTASK_CLASS;
  snprintf(text, sizeof text, "%s|%g,%g,%g,%g,%g|%d|%s|%.23s", k->op, f[0], f[1], f[2], f[3], f[4], j,
           knob, step);
  for (int32_t i = 0; i < ta->n; i++)
    if (!strcmp(ta->t[i].text, text)) return i;
  if (ta->n == ta->cap) {
    tally_t *g = realloc(ta->t, (size_t)(ta->cap ? 2 * ta->cap : 32) * sizeof *g);
    if (!g) return -1;
    ta->t = g;
    ta->cap = ta->cap ? 2 * ta->cap : 32;
  }
  memset(&ta->t[ta->n], 0, sizeof ta->t[0]);
  snprintf(ta->t[ta->n].text, sizeof ta->t[0].text, "%s", text);
  return ta->n++;
}

/* A step's rank: its mean gain on the kernel class; an untried step ranks between the steps that
 * paid and those that cost, in an order of its own per task (a hash of the task and the step),
 * so that in the first round the tasks of a class try different steps and the next round
 * already knows which of them paid for the class. */
static double step_score(const tallies_t *ta, int32_t key, const char *task) {
  char buf[200];
  if (key < 0) return -INFINITY;
  if (ta->t[key].n > 0) return ta->t[key].sum / ta->t[key].n;
  snprintf(buf, sizeof buf, "%s|%s", task, ta->t[key].text);
  return -1e-9 * (double)(mi_hash64(buf, strlen(buf), 0) % 1000 + 1);
}

static int tried_has(const mi__ltask_state_t *ts, const char *c) {
  for (int32_t i = 0; i < ts->ntried; i++)
    if (!strcmp(ts->tried[i], c)) return 1;
  return 0;
}

/* The class has measured this step on at least two tasks and it cost on average what a taken
 * step must gain: skipped, which on OpenCL and Vulkan saves compiling a kernel that would lose
 * (ops whose only knob is the work-group size gain nothing on a CPU device). */
static int predicted_loss(const tallies_t *ta, int32_t key) {
  return key >= 0 && ta->t[key].n >= 2 && ta->t[key].sum / ta->t[key].n < log(ACCEPT);
}

static void moves_clear(kstate_t *ks) {
  for (int32_t i = 0; i < ks->nm; i++) free(ks->mv[i]);
  ks->nm = ks->next = 0;
}

/* A knob whose values are names (`simd`: auto|avx512|avx2|c), not numbers: its domain has no
 * order, so stepping only to the neighbouring value strands the climb (from `auto` it would have
 * to gain on `avx512`, the same kernel on a CPU whose auto is AVX-512, before it could reach
 * `avx2`); its other values are steps too, tried after the neighbouring ones (gen_moves). */
static int categorical(const mi_space_t *s, int32_t d) {
  for (int32_t v = 0; v < mi_space_dim_size(s, d); v++) {
    const char *l = mi_space_dim_label(s, d, v);
    char *end = NULL;
    if (!l || !*l) return 1;
    (void)strtod(l, &end);
    if (!end || *end) return 1;
  }
  return 0;
}

/* A step's place in the order: the momentum step first, then step_score, a named knob's far value
 * after every other step until the kernel class has measured it. */
static double step_rank(const tallies_t *ta, const kstate_t *ks, int32_t key, int far, const char *task) {
  if (key == ks->last && key >= 0) return INFINITY;
  return step_score(ta, key, task) - (far && key >= 0 && ta->t[key].n == 0 ? 1e3 : 0);
}

/* The steps of node j's knob dimension d from point `from` (its conv's choice there): one value
 * up and one down (a named knob: every other value, ranked after the neighbouring steps until the
 * kernel class has measured it), each kept only when the space's rules leave the value as set and
 * not measured before. */
static void knob_steps(const mi_space_t *s, const int32_t *from, int32_t d, int j, const mi_ltask_t *k,
                       const mi__ltask_state_t *ts, kstate_t *ks, tallies_t *ta, int32_t *tmp2) {
  int32_t D = mi_space_dim_count(s);
  const char *name = mi_space_dim_name(s, d), *knob = strrchr(name, '.');
  int cat = categorical(s, d), n = cat ? mi_space_dim_size(s, d) : 2;
  for (int i = 0; i < n; i++) {
    int32_t v = cat ? i : from[d] + (i == 0 ? 1 : -1);
    char step[24], *c;
    if (v < 0 || v >= mi_space_dim_size(s, d) || v == from[d] || ks->nm >= MOVES_MAX) continue;
    if (cat)
      snprintf(step, sizeof step, "=%.22s", mi_space_dim_label(s, d, v));
    else
      snprintf(step, sizeof step, "%+d", i == 0 ? 1 : -1);
    memcpy(tmp2, from, (size_t)D * sizeof *tmp2);
    tmp2[d] = v;
    if (mi_space_repair(s, tmp2, NULL, NULL) != MI_OK || tmp2[d] != v) continue;
    if (!(c = mi__ltask_task_choice(s, tmp2, k, 0))) continue;
    if (!strcmp(c, ks->center) || tried_has(ts, c)) {
      free(c);
      continue;
    }
    ks->key[ks->nm] = tally_key(ta, k, j, knob ? knob + 1 : name, step);
    ks->far[ks->nm] = cat && abs(v - from[d]) > 1;
    ks->mv[ks->nm++] = c;
  }
}

/* The steps from `center`: every knob the task's conv(s) read there (knob_steps); a conv whose
 * variant is auto reads none of its own, so its steps are those of auto's stand-in
 * (mi__ltask_stand_in: the kernel the plugin's pick measured as), each taken from auto's time. None
 * is measured before; ordered with the step that made the centre first, then by what each step
 * did on this kernel class (step_score). */
static void gen_moves(const mi_space_t *s, const int32_t *base, const mi_ltask_t *k, const mi__ltask_state_t *ts,
                      kstate_t *ks, tallies_t *ta, int32_t *tmp, int32_t *tmp2, int32_t *tmp3) {
  int32_t D = mi_space_dim_count(s), node[2] = {k->nodes[0], k->second ? k->second[0] : -1};
  moves_clear(ks);
  memcpy(tmp, base, (size_t)D * sizeof *tmp);
  if (!mi__ltask_apply_all(s, tmp, k, ks->center) || mi_space_repair(s, tmp, NULL, NULL) != MI_OK) return;
  for (int j = 0; j < 2; j++) {
    int32_t vd = mi__ltask_variant_dim(s, node[j]), v;
    const int32_t *from = tmp;
    if (node[j] < 0) continue;
    if (vd >= 0 && tmp[vd] == 0 && (v = mi__ltask_stand_in(s, k, j, ts, tmp, tmp2)) > 0) {
      /* Auto: the stand-in at its declared knobs (repair resets the knobs auto left inactive). */
      memcpy(tmp3, tmp, (size_t)D * sizeof *tmp3);
      tmp3[vd] = v;
      if (mi_space_repair(s, tmp3, NULL, NULL) != MI_OK || tmp3[vd] != v) continue;
      from = tmp3;
    }
    for (int32_t d = 0; d < D; d++)
      if (mi_space_dim_node(s, d) == node[j] && mi_space_dim_kind(s, d) == MI_DIM_KNOB && mi_space_active(s, from, d))
        knob_steps(s, from, d, j, k, ts, ks, ta, tmp2);
  }
  /* Insertion sort, stable: the momentum step first, then the best mean gain. */
  for (int32_t i = 1; i < ks->nm; i++) {
    char *c = ks->mv[i];
    int32_t key = ks->key[i], at = i;
    uint8_t far = ks->far[i];
    double sc = step_rank(ta, ks, key, far, k->key);
    while (at > 0) {
      double ps = step_rank(ta, ks, ks->key[at - 1], ks->far[at - 1], k->key);
      if (ps >= sc) break;
      ks->mv[at] = ks->mv[at - 1];
      ks->key[at] = ks->key[at - 1];
      ks->far[at] = ks->far[at - 1];
      at--;
    }
    ks->mv[at] = c;
    ks->key[at] = key;
    ks->far[at] = far;
  }
}

/* Task i's starting point: its fastest measured choice that has a step to take (auto has its
 * stand-in's). */
static void start(const mi_space_t *s, const int32_t *base, const mi_ltask_t *k, const mi__ltask_state_t *ts,
                  kstate_t *ks, tallies_t *ta, int32_t *tmp, int32_t *tmp2, int32_t *tmp3) {
  uint8_t *seen = calloc((size_t)ts->ntried + 1, 1);
  if (!seen) return;
  for (;;) {
    int32_t b = -1;
    for (int32_t i = 0; i < ts->ntried; i++)
      if (!seen[i] && isfinite(ts->tried_s[i]) && (b < 0 || ts->tried_s[i] < ts->tried_s[b])) b = i;
    if (b < 0) break;
    seen[b] = 1;
    free(ks->center);
    if (!(ks->center = strdup(ts->tried[b]))) break;
    ks->center_s = ts->tried_s[b];
    ks->last = -1;
    gen_moves(s, base, k, ts, ks, ta, tmp, tmp2, tmp3);
    if (ks->nm > 0) {
      ks->active = 1;
      break;
    }
  }
  free(seen);
}

int32_t mi__ltask_knob_stage(const mi_graph_t *g, const mi_space_t *s, const mi_ltasks_t *t,
                             const int32_t *base, const mi_ltask_options_t *o, double phase_t0,
                             mi__ltask_state_t *ts, mi_ltask_result_t *out, mi_error_t *err) {
  int has = o->struct_size >= offsetof(mi_ltask_options_t, knob_seconds) + sizeof o->knob_seconds;
  int32_t rounds = has ? o->knob_rounds : 0, D = mi_space_dim_count(s), rc = MI_OK;
  double limit = has ? o->knob_seconds : 0, t0 = mi_now_s();
  int32_t *pt, *tmp, *tmp2, *tmp3, *in_round;
  double *node_s;
  kstate_t *ks;
  tallies_t ta = {NULL, 0, 0};
  if (rounds <= 0 || t->count == 0) return MI_OK;
  pt = malloc((size_t)D * sizeof *pt + 1);
  tmp = malloc((size_t)D * sizeof *tmp + 1);
  tmp2 = malloc((size_t)D * sizeof *tmp2 + 1);
  tmp3 = malloc((size_t)D * sizeof *tmp3 + 1);
  in_round = calloc((size_t)t->count + 1, sizeof *in_round);
  node_s = malloc(((size_t)g->node_count + 1) * sizeof *node_s);
  ks = calloc((size_t)t->count + 1, sizeof *ks);
  if (!pt || !tmp || !tmp2 || !tmp3 || !in_round || !node_s || !ks) {
    rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "layer tasks: out of memory");
    goto done;
  }
  /* Tasks taken from the history keep their stored best, and tasks whose neighbours agreed keep
   * theirs (the warm start's saving); the others climb. */
  for (int32_t i = 0; i < t->count; i++)
    if (!ts[i].reused && ts[i].warm != 2) start(s, base, &t->tasks[i], &ts[i], &ks[i], &ta, tmp, tmp2, tmp3);
  for (int32_t r = 0; r < rounds; r++) {
    int32_t n_in = 0, any = 0;
    mi_error_t e;
    for (int32_t i = 0; i < t->count; i++) any |= ks[i].active;
    if (!any) break;
    if ((limit > 0 && mi_now_s() - t0 > limit) || mi__ltask_phase_left(o, phase_t0, out->rounds) <= 0) {
      /* Stopped by the seconds while some task still had steps: the rounds left are counted,
       * so the tuner can say what its time budget cut. */
      out->knob_rounds_cut = rounds - r;
      break;
    }
    memcpy(pt, base, (size_t)D * sizeof *pt);
    /* Every other task holds its best, so its time in this round is a fresh reading of it. */
    for (int32_t i = 0; i < t->count; i++)
      if (ts[i].best) mi__ltask_apply_all(s, pt, &t->tasks[i], ts[i].best);
    for (int32_t i = 0; i < t->count; i++) {
      in_round[i] = 0;
      while (ks[i].active && ks[i].next < ks[i].nm && !in_round[i]) {
        if (!predicted_loss(&ta, ks[i].key[ks[i].next]) &&
            mi__ltask_apply_all(s, pt, &t->tasks[i], ks[i].mv[ks[i].next]))
          in_round[i] = 1;
        else
          ks[i].next++;
      }
      if (ks[i].active && ks[i].next >= ks[i].nm) ks[i].active = 0; /* a local optimum */
      n_in += in_round[i];
    }
    if (n_in == 0) break;
    mi_space_repair(s, pt, NULL, NULL);
    for (int32_t n = 0; n < g->node_count; n++) node_s[n] = NAN;
    mi_error_clear(&e);
    rc = o->measure(o->measure_ctx, pt, node_s, &e);
    out->rounds++;
    out->knob_rounds++;
    for (int32_t i = 0; i < t->count; i++) {
      kstate_t *k = &ks[i];
      int32_t key;
      char *actual;
      double sec;
      if (!in_round[i]) continue;
      key = k->key[k->next];
      k->next++;
      out->layer_measurements++;
      out->knob_measurements++;
      out->warm_layer_measurements += ts[i].warm > 0;
      out->cold_run_layer_measurements++; /* a run with no history takes these steps too */
      if (!(actual = mi__ltask_task_choice(s, pt, &t->tasks[i], 0))) continue;
      sec = rc == MI_OK ? mi__ltask_seconds(&t->tasks[i], node_s) : NAN;
      if (rc == MI_OK || n_in == 1) mi__ltask_put_row(o, &t->tasks[i], actual, rc == MI_OK && isfinite(sec), sec);
      mi__ltask_tried(&ts[i], actual, sec);
      if (key >= 0 && isfinite(sec) && sec > 0 && k->center_s > 0) {
        ta.t[key].sum += log(k->center_s / sec);
        ta.t[key].n++;
      }
      if (!(isfinite(sec) && sec < k->center_s * ACCEPT)) {
        free(actual);
        continue;
      }
      free(k->center);
      k->center = actual;
      k->center_s = sec;
      k->last = key;
      if (!ts[i].best || sec < ts[i].best_s * ACCEPT) {
        char *b = strdup(actual);
        if (b) {
          if (!ts[i].knob_best) out->knob_improved++;
          free(ts[i].best);
          ts[i].best = b;
          ts[i].best_s = sec;
          ts[i].knob_best = 1;
        }
      }
      gen_moves(s, base, &t->tasks[i], &ts[i], k, &ta, tmp, tmp2, tmp3);
      k->active = k->nm > 0;
    }
    rc = MI_OK; /* one failed round fails only its steps */
  }
done:
  for (int32_t i = 0; ks && i < t->count; i++) {
    moves_clear(&ks[i]);
    free(ks[i].center);
  }
  free(ks);
  free(ta.t);
  free(pt);
  free(tmp);
  free(tmp2);
  free(tmp3);
  free(in_round);
  free(node_s);
  return rc;
}
