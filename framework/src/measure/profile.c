/* profile.c - profiles a model on a device in this process: the session's prepare time apart
 * from run time, end-to-end and per-node statistics, counters read around every repeat. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/measure_internal.h"

typedef struct counters {
  int32_t freq, temp, energy, memory; /* counter indices, -1 when the device has none */
  double freq_res, energy_res;        /* counter resolutions, in their units */
  int32_t energy_modeled;
} counters_t;

/* The node times of one If branch that ran as a nested session (mi_session_nested, by its
 * index there), per kept sample, summed over the sample's runs in which the branch ran. */
typedef struct nest_src {
  const mi_session_t *s;
  const mi_graph_t *g;
  int32_t node;
  const char *branch;
  double *wall;   /* g's node_count x MI_MEASURE_MAX_SAMPLES */
  int32_t *runs;  /* per sample: the runs of its batch that ran the branch */
  uint8_t *timed; /* per node of g: it ran on its own */
} nest_src_t;

typedef struct prof_src {
  mi_session_t *s;
  const mi_graph_t *g;
  mi_plugin_t *plugin;
  uint32_t device;
  const mi_measure_options_t *mo;
  counters_t c;
  mi_array_t **in, **outs;
  int32_t nin, nout;
  int use_device;               /* samples are device time */
  int32_t k;                    /* kept samples of this round */
  int32_t batch;                /* runs per sample (mi_sample_source_t.set_batch) */
  double *wall, *energy;        /* per kept sample */
  double *node_wall, *node_dev; /* node_count x MI_MEASURE_MAX_SAMPLES */
  uint8_t *node_has_dev;
  double peak_mem;
  unsigned char *flush;
  size_t flush_bytes;
  nest_src_t *nest;
  int32_t nest_count;
  /* The anchor (mi__anchor_t) as a source of its own: its session, inputs and, in wall[], its
   * time at each kept sample of this one; NULL when none, or when it failed (anchor_lost). */
  struct prof_src *anchor;
  int anchor_lost;
  int mem_taken; /* the memory was read before the anchor's session existed */
} prof_src_t;

static int read_counter(prof_src_t *p, int32_t idx, double *v) {
  mi_counter_sample_t s;
  mi_error_t e;
  if (idx < 0 || !p->plugin->api.counter_read) return 0;
  memset(&s, 0, sizeof s);
  s.struct_size = (uint32_t)sizeof s;
  if (p->plugin->api.counter_read(p->plugin->ctx, p->device, (uint32_t)idx, &s, &e) != MI_OK)
    return 0;
  if (!s.has_value) return 0;
  *v = s.value;
  return 1;
}

static void find_counters(prof_src_t *p) {
  mi_counter_desc_t *d = NULL;
  uint32_t n = 0;
  p->c.freq = p->c.temp = p->c.energy = p->c.memory = -1;
  if (mi_plugin_counters(p->plugin, p->device, &d, &n, NULL) != MI_OK) return;
  for (uint32_t i = 0; i < n; i++) {
    int32_t *slot = NULL;
    switch (d[i].kind) {
    case MI_COUNTER_FREQUENCY:
      slot = &p->c.freq;
      p->c.freq_res = d[i].resolution;
      break;
    case MI_COUNTER_TEMPERATURE: slot = &p->c.temp; break;
    case MI_COUNTER_ENERGY:
      slot = &p->c.energy;
      p->c.energy_modeled = d[i].modeled;
      p->c.energy_res = d[i].resolution;
      break;
    case MI_COUNTER_MEMORY: slot = &p->c.memory; break;
    default: break;
    }
    if (slot && *slot < 0) *slot = (int32_t)i;
  }
  free(d);
}

static void flush_between(void *user) {
  prof_src_t *p = user;
  /* Write every cache line so the next repeat starts from memory, as a cold inference would. */
  for (size_t i = 0; p->flush && i < p->flush_bytes; i += 64) p->flush[i]++;
}

static void begin_round(void *user) { ((prof_src_t *)user)->k = 0; }

static void set_batch(void *user, int32_t runs) { ((prof_src_t *)user)->batch = runs; }

/* A device time the wall clock contradicts is a lie, not a sample: nothing at all for a whole
 * run, or more than the call that contained it took (a negative time read as uint64 is 584
 * years). Such a device's figures cannot be trusted for anything: the measurement fails and
 * the pool quarantines the device at once (worker.c). */
static int32_t plausible(uint64_t dev_ns, double wall_s, mi_error_t *err) {
  double dev_s = (double)dev_ns * 1e-9;
  if (dev_ns == 0)
    return mi_errorf(err, MI_ERR_DEVICE, MI__LIE_PREFIX ": 0 ns for a run of %.3g s wall time",
                     wall_s);
  if (!(dev_s <= wall_s * 1.5 + 1e-3))
    return mi_errorf(err, MI_ERR_DEVICE,
                     MI__LIE_PREFIX ": %.3g s (%llu ns) for a run of %.3g s wall time", dev_s,
                     (unsigned long long)dev_ns, wall_s);
  return MI_OK;
}

MI_API int32_t mi_device_time_check(uint64_t device_ns, double wall_s, mi_error_t *err) {
  return plausible(device_ns, wall_s, err);
}

/* After a run: adds the node times of every branch that ran as a nested session to sample
 * `slot`. Out of memory, a branch stays out of the profile (its time in its If's row). */
static void nest_take(prof_src_t *p, size_t slot) {
  const size_t stride = MI_MEASURE_MAX_SAMPLES;
  for (int32_t i = 0; i < mi_session_nested_count(p->s); i++) {
    int32_t node = -1;
    const char *branch = NULL;
    const mi_graph_t *g = NULL;
    const mi_session_t *ns = mi_session_nested(p->s, i, &node, &branch, &g);
    nest_src_t *e;
    if (!ns || !g) continue;
    if (i >= p->nest_count) {
      nest_src_t *grown = realloc(p->nest, ((size_t)i + 1) * sizeof *grown);
      if (!grown) continue;
      memset(grown + p->nest_count, 0, ((size_t)i + 1 - (size_t)p->nest_count) * sizeof *grown);
      p->nest = grown;
      p->nest_count = i + 1;
    }
    e = &p->nest[i];
    if (!e->wall) {
      e->wall = calloc((size_t)g->node_count * stride + 1, sizeof *e->wall);
      e->runs = calloc(stride, sizeof *e->runs);
      e->timed = calloc((size_t)g->node_count + 1, 1);
      if (!e->wall || !e->runs || !e->timed) {
        free(e->wall);
        free(e->runs);
        free(e->timed);
        memset(e, 0, sizeof *e);
        continue;
      }
      e->g = g;
    }
    if (e->g->node_count != g->node_count) continue; /* another graph: not comparable */
    e->s = ns;
    e->g = g;
    e->node = node;
    e->branch = branch;
    e->runs[slot]++;
    for (int32_t n = 0; n < g->node_count; n++) {
      uint64_t wn = 0;
      if (mi_session_node_time(ns, n, &wn, NULL) <= 0) continue;
      e->wall[(size_t)n * stride + slot] += (double)wn * 1e-9;
      e->timed[n] = 1;
    }
  }
}

/* One sample: `batch` runs back to back, each timed on its own (the per-node bookkeeping between
 * them stays outside the timed spans), their mean; counters are read around the whole batch. */
static int32_t own_run(void *user, double *seconds, int *changed, mi_error_t *err) {
  prof_src_t *p = user;
  double f0 = 0, f1 = 0, t0 = 0, t1 = 0, e0 = 0, e1 = 0, m = 0, wall = 0, devsum = 0;
  int hf0 = read_counter(p, p->c.freq, &f0), ht0 = read_counter(p, p->c.temp, &t0);
  int he0 = read_counter(p, p->c.energy, &e0), all_dev = 1;
  int32_t batch = p->batch > 0 ? p->batch : 1, rc = MI_OK;
  size_t slot = (size_t)p->k, stride = MI_MEASURE_MAX_SAMPLES;
  int keep_nodes = p->k < MI_MEASURE_MAX_SAMPLES;
  for (int32_t n = 0; keep_nodes && n < p->g->node_count; n++)
    p->node_wall[(size_t)n * stride + slot] = p->node_dev[(size_t)n * stride + slot] = 0;
  for (int32_t i = 0; keep_nodes && i < p->nest_count; i++) {
    const nest_src_t *e = &p->nest[i];
    if (e->runs) e->runs[slot] = 0;
    for (int32_t n = 0; e->wall && e->g && n < e->g->node_count; n++)
      e->wall[(size_t)n * stride + slot] = 0;
  }
  for (int32_t b = 0; b < batch && rc == MI_OK; b++) {
    uint64_t dev = 0;
    double w0 = mi__now_s(), w1;
    rc = mi_session_run(p->s, (const mi_array_t *const *)p->in, p->nin, p->outs, p->nout, err);
    w1 = mi__now_s();
    for (int32_t i = 0; i < p->nout; i++) {
      mi_array_destroy(p->outs[i]);
      p->outs[i] = NULL;
    }
    wall += w1 - w0;
    if (p->use_device && mi_session_device_time(p->s, &dev)) {
      if ((rc = plausible(dev, w1 - w0, err))) break;
      devsum += (double)dev * 1e-9;
      /* Nodes the device refused ran on the host, on the run's critical path: their wall time
       * counts too, or a configuration that leaves work on the host would look faster. With
       * every device kernel on the device's timer, the nodes timed by wall alone are those. */
      for (int32_t n = 0; n < p->g->node_count; n++) {
        uint64_t wn = 0;
        if (mi_session_node_time(p->s, n, &wn, NULL) == 1) devsum += (double)wn * 1e-9;
      }
    } else {
      all_dev = 0;
    }
    for (int32_t n = 0; keep_nodes && n < p->g->node_count; n++) {
      uint64_t wn = 0, dn = 0;
      int r = mi_session_node_time(p->s, n, &wn, &dn);
      p->node_wall[(size_t)n * stride + slot] += (double)wn * 1e-9 / batch;
      p->node_dev[(size_t)n * stride + slot] += (double)dn * 1e-9 / batch;
      if (r == 2) p->node_has_dev[n] = 1;
    }
    if (keep_nodes) nest_take(p, slot);
  }
  if (rc) return rc;
  *changed = 0;
  if (hf0 && read_counter(p, p->c.freq, &f1) && fabs(f1 - f0) > p->c.freq_res * 0.5) *changed = 1;
  if (ht0 && read_counter(p, p->c.temp, &t1) && fabs(t1 - t0) > p->mo->temp_tolerance_c)
    *changed = 1;
  if (!p->mem_taken && read_counter(p, p->c.memory, &m) && m > p->peak_mem) p->peak_mem = m;
  *seconds = (p->use_device && all_dev ? devsum : wall) / batch;
  if (*changed || !keep_nodes) return MI_OK;
  p->wall[p->k] = wall / batch;
  p->energy[p->k] = he0 && read_counter(p, p->c.energy, &e1) ? e1 - e0 : NAN;
  /* A difference of two cumulative readings carries rounding noise from everything counted
   * before (the same run reads 4.87212912500005e-05 or 4.872129125e-05 J depending on what the
   * worker measured earlier). The counter only resolves its declared step: keep that. */
  if (p->c.energy_res > 0 && isfinite(p->energy[p->k]))
    p->energy[p->k] = round(p->energy[p->k] / p->c.energy_res) * p->c.energy_res;
  p->energy[p->k] /= batch;
  p->k++;
  return MI_OK;
}

static void src_free(prof_src_t *p);
static int32_t src_init(prof_src_t *p, const mi_graph_t *g, const mi_array_t *const *inputs,
                        mi_error_t *err);

/* One run of x's session, its wall seconds in *wall (the run alone, as own_run times it: not the
 * dropping of its outputs after it), its outputs dropped. */
static int32_t run_once(prof_src_t *x, double *wall, mi_error_t *err) {
  double w0 = mi__now_s();
  int32_t rc = mi_session_run(x->s, (const mi_array_t *const *)x->in, x->nin, x->outs, x->nout, err);
  *wall = mi__now_s() - w0;
  for (int32_t i = 0; i < x->nout; i++) {
    mi_array_destroy(x->outs[i]);
    x->outs[i] = NULL;
  }
  return rc;
}

/* The anchor's `batch` runs right after a sample of the profiled configuration, timed by the
 * same clock, after one untimed run; their mean, or -1 when a run failed (the anchor is dropped
 * then: its failure is not the measured configuration's). The untimed run takes what the switch
 * from the other session costs (on oww_embedding, a 2-thread anchor after a 1-thread sample
 * woke the second thread in its first run: 0.70-0.74 ms paired against 0.64-0.69 alone), which
 * a deployed configuration, running alone, never pays. */
static double anchor_runs(prof_src_t *p, int32_t batch) {
  prof_src_t *a = p->anchor;
  double wall = 0, dev = 0, w;
  int all_dev = p->use_device;
  mi_error_t e;
  if (run_once(a, &w, &e)) {
    p->anchor_lost = 1;
    return -1;
  }
  for (int32_t b = 0; b < batch; b++) {
    uint64_t ns = 0;
    int32_t rc = run_once(a, &w, &e);
    wall += w;
    if (rc) {
      p->anchor_lost = 1;
      return -1;
    }
    if (all_dev && mi_session_device_time(a->s, &ns)) dev += (double)ns * 1e-9;
    else
      all_dev = 0;
  }
  return (all_dev ? dev : wall) / batch;
}

/* A sample (own_run), then the anchor's as many runs when there is one; a kept sample keeps the
 * anchor's time at its index. With an anchor, the sample too starts after one untimed run, as
 * the anchor's do. */
static int32_t one_run(void *user, double *seconds, int *changed, mi_error_t *err) {
  prof_src_t *p = user;
  double w;
  int32_t k0 = p->k, rc = p->anchor && !p->anchor_lost ? run_once(p, &w, err) : MI_OK;
  if (rc == MI_OK) rc = own_run(user, seconds, changed, err);
  if (rc == MI_OK && p->anchor && !p->anchor_lost) {
    double at = anchor_runs(p, p->batch > 0 ? p->batch : 1);
    if (p->k > k0) p->anchor->wall[k0] = at;
  }
  return rc;
}

/* The anchor made ready after the profiled session's first run: its memory is read first (the
 * anchor's session must not count in it), then the anchor's session is prepared and run once.
 * An anchor that cannot run leaves the profile without one (paired_count 0). A device that
 * reports its clock or temperature gets none: the protocol drops its samples taken while they
 * change, and the anchor's runs between samples would change them (heat). */
static void anchor_start(prof_src_t *p, const mi__anchor_t *an, mi_profile_t *r) {
  prof_src_t *a;
  mi_session_options_t so;
  double m = 0;
  mi_error_t e;
  if (p->c.freq >= 0 || p->c.temp >= 0) return;
  /* Timed as the profiled session is, kernel by kernel: the default's own trial then reads 1. */
  memset(&so, 0, sizeof so);
  so.allow_host_fallback = 1;
  if (an->so) memcpy(&so, an->so, an->so->struct_size < sizeof so ? an->so->struct_size : sizeof so);
  so.struct_size = (uint32_t)sizeof so;
  so.per_node_timing = 1;
  if (read_counter(p, p->c.memory, &m) && m > p->peak_mem) p->peak_mem = m;
  if (!(p->peak_mem > 0)) r->peak_memory_bytes = mi_process_memory_bytes("VmHWM");
  p->mem_taken = 1;
  if (!(a = calloc(1, sizeof *a))) return;
  p->anchor = a;
  a->plugin = p->plugin;
  a->device = p->device;
  a->g = an->g;
  if (src_init(a, an->g, an->inputs, &e) || mi_session_create(an->g, p->plugin, p->device, &so, &a->s, &e) ||
      anchor_runs(p, 1) < 0)
    p->anchor_lost = 1;
}

/* The profile's paired_* from the kept samples' ratios to the anchor's times. */
static void anchor_fill(const prof_src_t *p, mi_profile_t *r, double trim) {
  double ratio[MI_MEASURE_MAX_SAMPLES], at[MI_MEASURE_MAX_SAMPLES];
  int32_t n = 0, k = p->k < r->latency.sample_count ? p->k : r->latency.sample_count;
  mi_stats_t st;
  mi_error_t e;
  if (!p->anchor || p->anchor_lost) return;
  for (int32_t i = 0; i < k; i++)
    if (p->anchor->wall[i] > 0 && r->latency.samples[i] > 0) {
      ratio[n] = r->latency.samples[i] / p->anchor->wall[i];
      at[n++] = p->anchor->wall[i];
    }
  if (n == 0 || mi_stats_compute(ratio, n, trim, &st, &e)) return;
  r->paired_ratio = st.median;
  if (mi_stats_compute(at, n, trim, &st, &e)) return;
  r->paired_s = st.median;
  r->paired_count = n;
}

uint64_t mi_process_memory_bytes(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  size_t n = strlen(field);
  uint64_t kb = 0;
  if (!f) return 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, field, n) == 0 && line[n] == ':') kb = strtoull(line + n + 1, NULL, 10);
  fclose(f);
  return kb * 1024;
}

void mi_process_reset_peak(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w"); /* "5": the peak RSS back to the current */
  if (!f) return;
  fputs("5", f);
  fclose(f);
}

/* The reference check catches wrong kernels, not rounding: per output, the relative L2 error
 * ||out - ref|| / max(||ref||, 1e-3 * sqrt(n)), the worst output counting. The max
 * error over the max |ref| it replaces made one element decide, and on an output near zero
 * everywhere (a detector's sigmoid map on random inputs peaks at 1e-5) a one-code INT8 rounding
 * difference, carried to the output, was tens of percent of that "range". L2 weighs the whole
 * output, as the accuracy drop does (mi_xf_compare_run's rel_l2); the floor says that an output
 * whose RMS is under 1e-3 of the unit is compared in absolute terms (an RMS error of 5e-5 passes),
 * so a near-zero output no longer divides by its own noise, while an output of ordinary scale
 * keeps the pure relative error. Each output on its own: one of scale 100 no longer hides a
 * wrong one of scale 1. */
double mi__check_error(const float *out, const float *ref, int64_t n) {
  double d2 = 0, r2 = 0;
  for (int64_t j = 0; j < n; j++) {
    double d = (double)out[j] - (double)ref[j];
    d2 += d * d;
    r2 += (double)ref[j] * (double)ref[j];
  }
  return sqrt(d2) / fmax(sqrt(r2), 1e-3 * sqrt((double)(n > 0 ? n : 1)));
}

MI_API int mi_outputs_check(const mi_array_t *const *dev, const mi_array_t *const *ref,
                            int32_t n, double *rel_err) {
  return mi_outputs_check_graph(NULL, dev, ref, n, rel_err, NULL);
}

/* 1 when tensor t is computed through a comparison or rounding of float values. */
static int discrete_value(const mi_graph_t *g, int32_t t) {
  static const char *const k_ops[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "ArgMax",
                                      "ArgMin", "TopK", "NonMaxSuppression", "Round", "Floor", "Ceil"};
  int32_t *stack = malloc(((size_t)g->tensor_count + 1) * sizeof *stack), top = 0;
  uint8_t *seen = calloc((size_t)g->tensor_count + 1, 1);
  int found = 0;
  if (!stack || !seen || t < 0 || t >= g->tensor_count) goto done;
  stack[top++] = t;
  seen[t] = 1;
  while (top > 0 && !found) {
    int32_t p = g->tensors[stack[--top]].producer;
    const mi_node_t *n;
    if (p < 0 || p >= g->node_count) continue;
    n = &g->nodes[p];
    if (n->input_count > 0 && n->inputs[0] >= 0) {
      int32_t dt = g->tensors[n->inputs[0]].dtype;
      int fl = dt == MI_DTYPE_FLOAT32 || dt == MI_DTYPE_FLOAT16 || dt == MI_DTYPE_BFLOAT16;
      for (size_t k = 0; fl && k < sizeof k_ops / sizeof k_ops[0]; k++)
        if (!strcmp(n->op_type, k_ops[k])) found = 1;
    }
    for (int32_t k = 0; k < n->input_count; k++) {
      int32_t in = n->inputs[k];
      if (in >= 0 && !seen[in] && !g->tensors[in].data) {
        seen[in] = 1;
        stack[top++] = in;
      }
    }
  }
done:
  free(stack);
  free(seen);
  return found;
}

/* The error of a discrete output without its moved elements (more than the tolerance times the
 * largest reference magnitude off), when they are at most 1% of it and a tenth of the elements
 * that are that large on either side (a sparse peak map's device copy of zeros moves all of its
 * peaks); else the plain error. */
static double discrete_error(const float *out, const float *ref, int64_t n, int64_t *flipped) {
  double big = 0, d2 = 0, r2 = 0, thr;
  int64_t moved = 0, large = 0;
  for (int64_t j = 0; j < n; j++) big = fmax(big, fabs((double)ref[j]));
  thr = MI_OUTPUT_TOLERANCE * big;
  for (int64_t j = 0; j < n; j++) {
    double d = (double)out[j] - (double)ref[j];
    r2 += (double)ref[j] * (double)ref[j];
    large += fabs((double)ref[j]) > thr || fabs((double)out[j]) > thr;
    if (fabs(d) > thr && !isnan(d)) {
      moved++;
      continue;
    }
    d2 += d * d;
  }
  if (moved > n / 100 || 10 * moved > large) return mi__check_error(out, ref, n);
  *flipped += moved;
  return sqrt(d2) / fmax(sqrt(r2), 1e-3 * sqrt((double)(n > 0 ? n : 1)));
}

MI_API int mi_outputs_check_graph(const mi_graph_t *g, const mi_array_t *const *dev,
                                  const mi_array_t *const *ref, int32_t n, double *rel_err,
                                  int64_t *flipped) {
  double worst = 0;
  int64_t moved = 0;
  for (int32_t i = 0; i < n; i++) {
    double e;
    int64_t cnt;
    if (!dev[i] || !ref[i] || dev[i]->dtype != MI_DTYPE_FLOAT32 || ref[i]->dtype != MI_DTYPE_FLOAT32 ||
        (cnt = mi_array_numel(dev[i])) != mi_array_numel(ref[i])) {
      worst = INFINITY;
      continue;
    }
    /* without a graph every output is checked as a continuous one */
    e = g && i < g->output_count && discrete_value(g, g->outputs[i]) ? discrete_error(dev[i]->data, ref[i]->data, cnt, &moved)
                                                                     : mi__check_error(dev[i]->data, ref[i]->data, cnt);
    if (isnan(e)) e = INFINITY; /* a NaN on either side counts as the worst */
    if (e > worst) worst = e;
  }
  *rel_err = worst;
  if (flipped) *flipped = moved;
  return worst <= MI_OUTPUT_TOLERANCE;
}

int32_t mi__reference_check(mi_session_t *s, const mi_graph_t *g, mi_array_t **in, int32_t nin,
                            mi_array_t **outs, int32_t nout, mi_array_t **keep, int *ok,
                            double *rel_err, mi_error_t *err) {
  mi_array_t **ref = keep ? keep : calloc((size_t)nout + 1, sizeof *ref);
  int32_t rc;
  if (!ref) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "reference check: out of memory");
  rc = mi_session_run(s, (const mi_array_t *const *)in, nin, outs, nout, err);
  if (!rc && !(keep && nout > 0 && keep[0])) rc = mi_ref_run(g, (const mi_array_t *const *)in, nin, ref, nout, err);
  if (!rc)
    *ok = mi_outputs_check_graph(g, (const mi_array_t *const *)outs, (const mi_array_t *const *)ref, nout,
                                 rel_err, NULL);
  for (int32_t i = 0; i < nout; i++) {
    mi_array_destroy(outs[i]);
    outs[i] = NULL;
    if (!keep || rc) {
      mi_array_destroy(ref[i]);
      ref[i] = NULL;
    }
  }
  if (!keep) free(ref);
  return rc;
}

static int32_t check_reference(prof_src_t *p, mi_profile_t *out, mi_error_t *err) {
  int ok = 0;
  int32_t rc = mi__reference_check(p->s, p->g, p->in, p->nin, p->outs, p->nout, NULL, &ok,
                                   &out->check_error, err);
  if (rc == MI_OK) {
    out->checked = 1;
    out->check_ok = ok;
  }
  return rc;
}

static int32_t fill_layers(prof_src_t *p, mi_profile_t *out, double trim, mi_error_t *err) {
  const mi_graph_t *g = p->g;
  int32_t rc;
  out->layers = calloc((size_t)g->node_count + 1, sizeof *out->layers);
  if (!out->layers) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "profile: out of memory");
  for (int32_t n = 0; n < g->node_count; n++) {
    mi_layer_profile_t *l = &out->layers[out->layer_count];
    int r = mi_session_node_time(p->s, n, NULL, NULL);
    l->node = n;
    snprintf(l->name, sizeof l->name, "%s", g->nodes[n].name ? g->nodes[n].name : "");
    snprintf(l->op_type, sizeof l->op_type, "%s", g->nodes[n].op_type);
    if (r == 0) {
      l->where = 2;
    } else {
      double *ws = &p->node_wall[(size_t)n * MI_MEASURE_MAX_SAMPLES];
      double *ds = &p->node_dev[(size_t)n * MI_MEASURE_MAX_SAMPLES];
      l->where = 0;
      for (int32_t i = 0; i < mi_session_fallback_count(p->s); i++)
        if (g->nodes[n].name && strcmp(mi_session_fallback_node(p->s, i), g->nodes[n].name) == 0)
          l->where = mi_session_fallback_where(p->s, i, NULL, NULL) ? 3 : 1;
      if ((rc = mi_stats_compute(ws, p->k, trim, &l->wall, err))) return rc;
      if (p->node_has_dev[n]) {
        l->has_device_time = 1;
        if ((rc = mi_stats_compute(ds, p->k, trim, &l->device, err))) return rc;
      }
    }
    out->layer_count++;
  }
  return MI_OK;
}

/* out->nest: each branch's rows (mi_layer_rows on its graph and session) from its nodes'
 * medians over the kept samples that ran it. A branch inside a branch is not followed: its
 * time stays in its If's row. */
static int32_t fill_nest(prof_src_t *p, mi_profile_t *out, double trim, mi_error_t *err) {
  double col[MI_MEASURE_MAX_SAMPLES];
  int32_t rc = MI_OK;
  for (int32_t i = 0; rc == MI_OK && i < p->nest_count; i++) {
    const nest_src_t *e = &p->nest[i];
    mi_layer_row_t *rows = NULL;
    mi_nest_row_t *grown;
    double *med;
    int32_t n = 0;
    if (!e->s || !e->runs || !e->timed) continue;
    if (!(med = malloc(((size_t)e->g->node_count + 1) * sizeof *med)))
      return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "profile: out of memory");
    for (int32_t node = 0; rc == MI_OK && node < e->g->node_count; node++) {
      int32_t k = 0;
      mi_stats_t st;
      med[node] = -1;
      for (int32_t s = 0; e->timed[node] && s < p->k; s++)
        if (e->runs[s] > 0) col[k++] = e->wall[(size_t)node * MI_MEASURE_MAX_SAMPLES + (size_t)s] / e->runs[s];
      if (k > 0 && (rc = mi_stats_compute(col, k, trim, &st, err)) == MI_OK) med[node] = st.median * 1e3;
    }
    if (rc == MI_OK) rc = mi_layer_rows(e->g, e->s, NULL, med, &rows, &n, err);
    free(med);
    grown = rc == MI_OK ? realloc(out->nest, ((size_t)out->nest_count + (size_t)n + 1) * sizeof *grown) : NULL;
    if (rc == MI_OK && !grown) rc = mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "profile: out of memory");
    for (int32_t r = 0; rc == MI_OK && r < n; r++) {
      mi_nest_row_t *x = &grown[out->nest_count++];
      memset(x, 0, sizeof *x);
      x->parent = e->node;
      snprintf(x->branch, sizeof x->branch, "%s", e->branch);
      x->row = rows[r];
    }
    if (grown) out->nest = grown;
    free(rows);
  }
  return rc;
}

void *mi__profile_body(const mi_profile_t *p, size_t *n) {
  size_t nl = (size_t)p->layer_count * sizeof *p->layers;
  size_t nn = (size_t)p->nest_count * sizeof *p->nest;
  char *b = malloc(nl + nn + 1);
  if (!b) return NULL;
  if (nl) memcpy(b, p->layers, nl);
  if (nn) memcpy(b + nl, p->nest, nn);
  *n = nl + nn;
  return b;
}

static void src_free(prof_src_t *p) {
  for (int32_t i = 0; i < p->nest_count; i++) {
    free(p->nest[i].wall);
    free(p->nest[i].runs);
    free(p->nest[i].timed);
  }
  free(p->nest);
  for (int32_t i = 0; p->in && i < p->nin; i++) mi_array_destroy(p->in[i]);
  for (int32_t i = 0; p->outs && i < p->nout; i++) mi_array_destroy(p->outs[i]);
  free(p->in);
  free(p->outs);
  free(p->wall);
  free(p->energy);
  free(p->node_wall);
  free(p->node_dev);
  free(p->node_has_dev);
  free(p->flush);
  mi_session_destroy(p->s);
  if (p->anchor) src_free(p->anchor);
  free(p->anchor);
}

static int32_t src_init(prof_src_t *p, const mi_graph_t *g, const mi_array_t *const *inputs,
                        mi_error_t *err) {
  size_t cells = (size_t)(g->node_count + 1) * MI_MEASURE_MAX_SAMPLES;
  p->nin = g->input_count;
  p->nout = g->output_count;
  p->in = calloc((size_t)p->nin + 1, sizeof *p->in);
  p->outs = calloc((size_t)p->nout + 1, sizeof *p->outs);
  p->wall = calloc(MI_MEASURE_MAX_SAMPLES, sizeof *p->wall);
  p->energy = calloc(MI_MEASURE_MAX_SAMPLES, sizeof *p->energy);
  p->node_wall = calloc(cells, sizeof *p->node_wall);
  p->node_dev = calloc(cells, sizeof *p->node_dev);
  p->node_has_dev = calloc((size_t)g->node_count + 1, 1);
  if (!p->in || !p->outs || !p->wall || !p->energy || !p->node_wall || !p->node_dev ||
      !p->node_has_dev)
    return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "profile: out of memory");
  for (int32_t i = 0; i < p->nin; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    if (inputs && inputs[i]) {
      if (!(p->in[i] = mi_array_create(inputs[i]->dtype, inputs[i]->rank, inputs[i]->dims)))
        return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "profile: out of memory");
      memcpy(p->in[i]->data, inputs[i]->data, inputs[i]->nbytes);
      continue;
    }
    p->in[i] = mi_array_create(t->dtype, t->rank, t->dims);
    if (!p->in[i])
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                       "profile: input '%s' has no concrete shape to make data for", t->name);
    if (t->dtype == MI_DTYPE_FLOAT32) mi_array_fill_random(p->in[i], 42 + (uint64_t)i);
  }
  return MI_OK;
}

MI_API int32_t mi_profile_run(const mi_graph_t *g, mi_plugin_t *plugin, uint32_t device,
                              const mi_session_options_t *so, const mi_measure_options_t *mo,
                              int check, mi_profile_t **out, mi_error_t *err) {
  return mi__profile_run_on(g, plugin, device, so, mo, check, NULL, NULL, out, err);
}

int32_t mi__profile_run_on(const mi_graph_t *g, mi_plugin_t *plugin, uint32_t device,
                           const mi_session_options_t *so, const mi_measure_options_t *mo,
                           int check, const mi_array_t *const *inputs, const mi__anchor_t *anchor,
                           mi_profile_t **out, mi_error_t *err) {
  prof_src_t p;
  mi_measure_options_t o;
  mi_sample_source_t src;
  mi_profile_t *r = NULL;
  mi_session_options_t so_timed;
  double t0, tmp[MI_MEASURE_MAX_SAMPLES];
  int32_t rc, ne = 0;
  uint64_t dev;
  if (!out) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_profile_run: out is NULL");
  *out = NULL;
  if (!g || !plugin) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "mi_profile_run: NULL graph or plugin");
  memset(&p, 0, sizeof p);
  mi_measure_options_default(&o);
  if (mo) memcpy(&o, mo, mo->struct_size < sizeof o ? mo->struct_size : sizeof o);
  r = calloc(1, sizeof *r);
  if (!r) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "profile: out of memory");
  snprintf(r->plugin_name, sizeof r->plugin_name, "%s", plugin->name);
  snprintf(r->plugin_version, sizeof r->plugin_version, "%s", plugin->version);
  r->device = device;
  r->load1 = mi__load1(&r->cpus); /* the machine as the measurement found it */
  if ((rc = mi_plugin_device_info(plugin, device, &r->desc, err))) goto done;
  mi_process_reset_peak(); /* the worker reports this job's peak */
  p.plugin = plugin;
  p.device = device;
  p.mo = &o;
  p.g = g;
  if ((rc = src_init(&p, g, inputs, err))) goto done;
  find_counters(&p);
  {
    /* A memory counter is read once before the session exists and the reading dropped: a
     * plugin whose counter is the most bytes in use since its last reading (blis-cpu's) then
     * counts this profile's session from its creation on, not what a job before it held in the
     * same worker. */
    double m0;
    (void)read_counter(&p, p.c.memory, &m0);
  }
  /* Every profile keeps per-layer times (mi-host profile's table, the tuner's layer rows):
   * its kernels run one at a time, each timed, not enqueued (ABI 1.3) and waited for at once. */
  memset(&so_timed, 0, sizeof so_timed);
  so_timed.allow_host_fallback = 1; /* the default of NULL options */
  if (so) memcpy(&so_timed, so, so->struct_size < sizeof so_timed ? so->struct_size : sizeof so_timed);
  so_timed.struct_size = (uint32_t)sizeof so_timed;
  so_timed.per_node_timing = 1;
  t0 = mi__now_s();
  if ((rc = mi_session_create(g, plugin, device, &so_timed, &p.s, err))) goto done;
  r->prepare_s = mi__now_s() - t0;
  r->fallback_count = mi_session_fallback_count(p.s);
  r->fallback_on_device = mi_session_fallback_device_count(p.s);
  if (so && MI_HAS_FIELD(so, mi_session_options_t, fallback_plugin) && so->fallback_plugin)
    snprintf(r->fallback_device, sizeof r->fallback_device, "%.60s:%u", so->fallback_plugin->name,
             so->fallback_device);
  if (r->fallback_device[0] && r->fallback_on_device > 0)
    mi_stack_fallback_describe(so->fallback_plugin, so->fallback_device, r->fallback_stack, sizeof r->fallback_stack);
  mi_session_memory(p.s, &r->planned_memory_bytes, &r->unplanned_memory_bytes, NULL);
  if (o.flush_cache && r->desc.kind == MI_DEVICE_CPU) {
    p.flush_bytes = r->desc.cache_bytes ? 2 * r->desc.cache_bytes : (32u << 20);
    if (p.flush_bytes > (256u << 20)) p.flush_bytes = 256u << 20;
    p.flush = calloc(p.flush_bytes, 1);
  }
  /* The first run says which clock to trust: the device's own timer when every kernel has one. */
  if ((rc = run_once(&p, &t0, err))) goto done;
  p.use_device = mi_session_device_time(p.s, &dev);
  if (p.use_device && (rc = plausible(dev, t0, err))) goto done;
  r->clock = p.use_device ? MI_CLOCK_DEVICE : MI_CLOCK_WALL;
  if (anchor) anchor_start(&p, anchor, r);
  memset(&src, 0, sizeof src);
  src.user = &p;
  src.run = one_run;
  src.begin_round = begin_round;
  /* A cold-cache repeat is one run: the runs after the first of a batch would be warm. */
  if (p.flush) src.between = flush_between;
  else
    src.set_batch = set_batch;
  if ((rc = mi_measure_run(&src, &o, &r->latency, err))) goto done;
  anchor_fill(&p, r, o.trim);
  if (p.anchor) { /* its memory goes before the layers' and the check's work */
    src_free(p.anchor);
    free(p.anchor);
    p.anchor = NULL;
  }
  if ((rc = mi_stats_compute(p.wall, p.k, o.trim, &r->wall, err))) goto done;
  for (int32_t i = 0; i < p.k; i++)
    if (isfinite(p.energy[i])) tmp[ne++] = p.energy[i];
  if (ne > 0) {
    mi_stats_t es;
    if ((rc = mi_stats_compute(tmp, ne, o.trim, &es, err))) goto done;
    r->has_energy = 1;
    r->energy_modeled = p.c.energy_modeled;
    r->energy_j = es.median;
  }
  if (p.peak_mem > 0) {
    r->peak_memory_bytes = (uint64_t)p.peak_mem;
    r->peak_memory_source = 1;
  } else if (p.mem_taken ? r->peak_memory_bytes > 0
                         : (r->peak_memory_bytes = mi_process_memory_bytes("VmHWM")) > 0) {
    r->peak_memory_source = 2;
  }
  if ((rc = fill_layers(&p, r, o.trim, err))) goto done;
  if ((rc = fill_nest(&p, r, o.trim, err))) goto done;
  if (check && (rc = check_reference(&p, r, err))) goto done;
done:
  src_free(&p);
  if (rc) {
    mi_profile_destroy(r);
    return rc;
  }
  *out = r;
  return MI_OK;
}

int32_t mi__profile_check(const mi_graph_t *g, mi_plugin_t *plugin, uint32_t device,
                          const mi_session_options_t *so, const mi_array_t *const *inputs,
                          mi_profile_t *r, mi_error_t *err) {
  prof_src_t p;
  int32_t rc;
  memset(&p, 0, sizeof p);
  p.plugin = plugin;
  p.device = device;
  p.g = g;
  if (!(rc = src_init(&p, g, inputs, err)) && !(rc = mi_session_create(g, plugin, device, so, &p.s, err)))
    rc = check_reference(&p, r, err);
  src_free(&p);
  return rc;
}

MI_API void mi_profile_destroy(mi_profile_t *p) {
  if (!p) return;
  free(p->layers);
  free(p->nest);
  free(p);
}

MI_API char *mi_profile_layers_json(const mi_profile_t *p) {
  static const char *const where[] = {"device", "host", "folded", "fallback"};
  mi__sbuf_t b = {0};
  if (!p) return NULL;
  mi__sbuf_printf(&b, "[");
  for (int32_t i = 0; i < p->layer_count; i++) {
    const mi_layer_profile_t *l = &p->layers[i];
    mi__sbuf_printf(&b, "%s{\"node\":%d,\"name\":", i ? "," : "", (int)l->node);
    mi__sbuf_json_string(&b, l->name);
    mi__sbuf_printf(&b, ",\"op\":");
    mi__sbuf_json_string(&b, l->op_type);
    mi__sbuf_printf(&b, ",\"where\":\"%s\"", where[l->where < 0 || l->where > 3 ? 2 : l->where]);
    if (l->where != 2) {
      mi__sbuf_printf(&b, ",\"wall_ms\":");
      mi__sbuf_json_stats(&b, &l->wall, 1e3);
    }
    if (l->has_device_time) {
      mi__sbuf_printf(&b, ",\"device_ms\":");
      mi__sbuf_json_stats(&b, &l->device, 1e3);
    }
    mi__sbuf_printf(&b, "}");
  }
  mi__sbuf_printf(&b, "]");
  return mi__sbuf_take(&b);
}
