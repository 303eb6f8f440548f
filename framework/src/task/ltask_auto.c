/* ltask_auto.c - the explicit variant that stands in for a layer task's "auto" (no variant named:
 * the plugin picks the kernel and its knobs). The space cannot say which kernel auto runs, and
 * auto has no knobs of its own, so a task whose best is auto had no knob to step although the
 * kernel the plugin picked reads some (blis-cpu's conv.depthwise_direct and its `simd`, the
 * kernel of every fused dw+pw pair, docs/tuning.md). The stand-in is the kernel the measurements
 * point to: the explicit variant, among those that run the task's unit as auto does, whose
 * choice measured fastest; the knob stage steps its knobs from auto (ltask_knob.c), and the
 * variant stage measures such variants first (ltask_tune.c). */
#include <math.h>
#include <string.h>

#include "space/space.h"
#include "task/ltask_internal.h"

int32_t mi__ltask_variant_dim(const mi_space_t *s, int32_t node) {
  for (int32_t d = 0; d < mi_space_dim_count(s) && node >= 0; d++)
    if (mi_space_dim_node(s, d) == node && mi_space_dim_kind(s, d) == MI_DIM_VARIANT) return d;
  return -1;
}

int mi__ltask_keeps_unit(const mi_space_t *s, const mi_ltask_t *k, int j, int32_t d, int32_t v) {
  const uint32_t need = MI_FUSE_CONV | MI_FUSE_MEMBER_CHOICES;
  /* The anchor of a dw+pw unit runs the pair as one kernel only with a variant that absorbs the
   * pointwise conv and honours its own choice (exec's plan.c); any other splits the unit. */
  if (v <= 0 || j != 0 || !k->second) return 1;
  return (mi__space_variant_fuse(s, d, v) & need) == need;
}

/* The value of variant dimension d that part j of a task choice names ("A | B" for a dw+pw
 * unit, A the anchor's), -1 when it names none or one d does not offer. */
static int32_t named_variant(const mi_space_t *s, int32_t d, const char *choice, int j) {
  const char *p = choice, *end, *bar = strstr(choice, " | ");
  size_t n;
  if (j == 1) {
    if (!bar) return -1;
    p = bar + 3;
    bar = NULL;
  }
  end = bar ? bar : p + strlen(p);
  for (;;) {
    const char *at = strstr(p, "variant=");
    if (!at || at >= end) return -1;
    if (at == p || at[-1] == ';') {
      p = at + 8;
      break;
    }
    p = at + 8;
  }
  for (n = 0; p + n < end && p[n] != ';'; n++) {}
  for (int32_t v = 1; v < mi_space_dim_size(s, d); v++) {
    const char *l = mi_space_dim_label(s, d, v);
    if (l && strlen(l) == n && !strncmp(l, p, n)) return v;
  }
  return -1;
}

/* 1 when node `node` reads at least one knob with variant value v (pt otherwise as given). */
static int reads_knob(const mi_space_t *s, const int32_t *pt, int32_t node, int32_t d, int32_t v, int32_t *tmp) {
  int32_t D = mi_space_dim_count(s);
  memcpy(tmp, pt, (size_t)D * sizeof *tmp);
  tmp[d] = v;
  for (int32_t e = 0; e < D; e++)
    if (mi_space_dim_node(s, e) == node && mi_space_dim_kind(s, e) == MI_DIM_KNOB && mi_space_active(s, tmp, e))
      return 1;
  return 0;
}

int32_t mi__ltask_stand_in(const mi_space_t *s, const mi_ltask_t *k, int j, const mi__ltask_state_t *ts,
                           const int32_t *pt, int32_t *tmp) {
  int32_t node = j ? (k->second ? k->second[0] : -1) : k->nodes[0], d = mi__ltask_variant_dim(s, node), best = -1;
  double best_s = INFINITY;
  if (d < 0) return -1;
  for (int32_t i = 0; i < ts->ntried; i++) {
    int32_t v;
    if (!(ts->tried_s[i] < best_s) || (v = named_variant(s, d, ts->tried[i], j)) <= 0) continue;
    if (!mi__ltask_keeps_unit(s, k, j, d, v) || !reads_knob(s, pt, node, d, v, tmp)) continue;
    best = v;
    best_s = ts->tried_s[i];
  }
  /* None measured (the variant stage's list was cut): the first that runs the unit. */
  for (int32_t v = 1; best < 0 && v < mi_space_dim_size(s, d); v++)
    if (mi__ltask_keeps_unit(s, k, j, d, v) && mi__space_variant_keeps_fp32(s, d, v) && reads_knob(s, pt, node, d, v, tmp))
      best = v;
  return best;
}
