/* bench_search.c - the search and meta-learning benchmark (issue 12): zoo models on npu-stub
 * gen1/gen2 (restricted spaces, exhaustive ground truth) and blis-cpu (pooled reference), every
 * configuration measured for real once into a cached table that all methods draw from.
 * MI_BENCH_RICH=1 and MI_BENCH_JOINT=1 add richer npu-stub tasks (the joint ones: bench_joint.c).
 * Usage: bench_search PLUGIN_DIR ZOO_DIR TABLE_FILE [SEEDS [TASK,TASK,...]] */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_search.h"
#include "metainfer/mi_transform.h"

#define BUDGET 64

/* Measures one configuration of task t (model side xc, hardware side hw) in its worker with
 * the benchmark's protocol: 2 warm-ups, then 5 to 10 repeats within 3 s. */
static int32_t bench_profile(const bs_task_t *t, mi_worker_pool_t *pool, const mi_xf_config_t *xc,
                             mi_space_hw_t *hw, mi_profile_t **prof,
                             mi_worker_config_result_t *res, mi_error_t *err) {
  mi_worker_config_t wc;
  mi_measure_options_t mo;
  mi_measure_options_default(&mo);
  mo.warmup = 2;
  mo.min_repeats = 5;
  mo.max_repeats = 10;
  mo.budget_s = 3;
  memset(&wc, 0, sizeof wc);
  wc.struct_size = sizeof wc;
  wc.model = t->model;
  wc.inputs = t->inputs[0] ? t->inputs : NULL;
  wc.xf = xc;
  wc.so = mi_space_hw_options(hw);
  wc.seed = 1;
  wc.samples = 2;
  return mi_worker_profile_config(pool, t->spec, &wc, &mo, 0, prof, res, err);
}

int32_t bs_evaluate(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj,
                    mi_error_t *err) {
  bs_task_t *t = ctx;
  uint64_t h = mi_space_hash(s, pt);
  int32_t i = bs_find(t, h), rc;
  mi_xf_config_t *xc = NULL;
  mi_space_hw_t *hw = NULL;
  mi_profile_t *prof = NULL;
  mi_worker_config_result_t res;
  bs_row_t *r;
  for (int j = 0; j < MI_OBJ_COUNT; j++) obj[j] = NAN;
  if (i < 0 && !t->pool) return mi_errorf(err, MI_ERR_NOT_FOUND, "bench: not in the table");
  if (i < 0) {
    /* A miss: measured for real once, then kept in the table (and its file). */
    if (t->n == t->cap) {
      bs_row_t *nr = realloc(t->rows, (size_t)(t->cap ? t->cap * 2 : 256) * sizeof *nr);
      if (!nr) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "bench: out of memory");
      t->rows = nr;
      t->cap = t->cap ? t->cap * 2 : 256;
    }
    r = &t->rows[t->n];
    memset(r, 0, sizeof *r);
    r->hash = h;
    for (int j = 0; j < MI_OBJ_COUNT; j++) r->obj[j] = NAN;
    if (!(r->pt = malloc((size_t)t->D * sizeof *r->pt))) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "bench: oom");
    memcpy(r->pt, pt, (size_t)t->D * sizeof *pt);
    memset(&res, 0, sizeof res);
    rc = mi_space_xf_config(s, pt, &xc, err);
    if (rc == MI_OK) rc = mi_space_hw_create(s, pt, &hw, err);
    if (rc == MI_OK) {
      rc = bench_profile(t, t->pool, xc, hw, &prof, &res, err);
    }
    r->ok = rc == MI_OK;
    if (rc == MI_OK) {
      double lat[8];
      int32_t m = t->measures > 8 ? 8 : t->measures;
      lat[0] = prof->latency.stats.median * 1e3;
      for (int32_t j = 1; j < m && rc == MI_OK; j++) {
        mi_profile_t *again = NULL;
        mi_worker_config_result_t res2;
        memset(&res2, 0, sizeof res2);
        if ((rc = bench_profile(t, t->pool, xc, hw, &again, &res2, err)) == MI_OK) lat[j] = again->latency.stats.median * 1e3;
        mi_profile_destroy(again);
      }
      r->ok = rc == MI_OK;
      r->obj[MI_OBJ_LATENCY] = m > 1 ? bs_median(lat, m) : lat[0];
      r->obj[MI_OBJ_MEMORY] = prof->peak_memory_source ? (double)prof->peak_memory_bytes / 1048576.0 : NAN;
      r->obj[MI_OBJ_ENERGY] = prof->has_energy ? prof->energy_j * 1e3 : NAN;
    }
    mi_profile_destroy(prof);
    mi_space_hw_destroy(hw);
    mi_xf_config_destroy(xc);
    t->fresh++;
    if (t->cache) {
      fprintf(t->cache, "%s %016llx %d %.9g %.9g %.9g", t->name, (unsigned long long)h, r->ok,
              r->obj[0], r->obj[1], r->obj[2]);
      for (int32_t d = 0; d < t->D; d++) fprintf(t->cache, " %d", (int)pt[d]);
      fprintf(t->cache, "\n");
      fflush(t->cache);
    }
    i = t->n++;
    if (r->ok && !(r->obj[0] >= t->ref)) t->ref = r->obj[0];
  }
  r = &t->rows[i];
  if (!r->ok) return mi_errorf(err, MI_ERR_INTERNAL, "bench: this configuration failed when measured");
  memcpy(obj, r->obj, sizeof r->obj);
  if (t->acc_bound > 0) {
    /* The accuracy-drop bound as a hard constraint: a configuration over it is refused like one
     * that fails, so every method (joint or in phases) sees it the same way and none can pick it. */
    obj[MI_OBJ_ACCURACY] = bs_accuracy(t, pt);
    if (!(obj[MI_OBJ_ACCURACY] <= t->acc_bound))
      return mi_errorf(err, MI_ERR_INVALID_CONFIG, "bench: accuracy drop %.4g over the bound %.4g",
                       obj[MI_OBJ_ACCURACY], t->acc_bound);
  }
  if (t->energy_bound > 0 && !t->hw_bounds_off && !(obj[MI_OBJ_ENERGY] <= t->energy_bound))
    return mi_errorf(err, MI_ERR_INVALID_CONFIG, "bench: energy %.4g mJ over the bound %.4g mJ",
                     obj[MI_OBJ_ENERGY], t->energy_bound);
  return MI_OK;
}

/* Reads the table file: "TASK HASH OK LAT MEM ENERGY D0 D1 ..." lines. */
static void load_table(bs_task_t *tasks, int32_t n, const char *path) {
  FILE *f = fopen(path, "r");
  char line[8192];
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    char name[64], *p = line, *end;
    unsigned long long h;
    int ok, used;
    double a, b, c;
    if (sscanf(p, "%63s %llx %d %lf %lf %lf%n", name, &h, &ok, &a, &b, &c, &used) != 6) continue;
    p += used;
    for (int32_t k = 0; k < n; k++) {
      bs_task_t *t = &tasks[k];
      bs_row_t *r;
      int32_t d;
      if (strcmp(t->name, name) || bs_find(t, h) >= 0) continue;
      if (t->n == t->cap) {
        bs_row_t *nr = realloc(t->rows, (size_t)(t->cap ? t->cap * 2 : 256) * sizeof *nr);
        if (!nr) break;
        t->rows = nr;
        t->cap = t->cap ? t->cap * 2 : 256;
      }
      r = &t->rows[t->n];
      if (!(r->pt = malloc((size_t)t->D * sizeof *r->pt))) break;
      for (d = 0; d < t->D; d++, p = end) {
        r->pt[d] = (int32_t)strtol(p, &end, 10);
        if (end == p) break;
      }
      /* A table from another build of the space is not trusted. */
      if (d < t->D || mi_space_hash(t->space, r->pt) != h) {
        free(r->pt);
        break;
      }
      r->hash = h;
      r->ok = ok;
      r->obj[0] = a;
      r->obj[1] = b;
      r->obj[2] = c;
      r->obj[3] = NAN;
      if (ok && !(a >= t->ref)) t->ref = a;
      t->n++;
    }
  }
  fclose(f);
}

/* Frees every dimension except the device knobs and those of the first `nodes` node slots. */
static void restrict_space(bs_task_t *t, int32_t nodes) {
  int32_t seen = 0, last = -2;
  for (int32_t d = 0; d < t->D; d++) {
    int32_t node = mi_space_dim_node(t->space, d);
    if (node >= 0 && node != last) {
      seen++;
      last = node;
    }
    const char *name = mi_space_dim_name(t->space, d);
    t->frozen[d] = !(node < 0 ? !strncmp(name, "device.", 7) : seen <= nodes);
    /* The batch changes the workload, not how it runs; the ISA is the machine's. */
    if (!strcmp(name, "device.batch") || strstr(name, ".knob.arch")) t->frozen[d] = 1;
  }
}

/* The rich restriction (MI_BENCH_RICH=1 tasks): the model-side dimensions and the SRAM tile of
 * the first `nodes` node slots that have a model-side dimension, with the device knobs (as
 * above), so that several layers' precision meets the hardware choices it interacts with (a
 * tile's SRAM footprint depends on the weights' width). Prints what it kept. */
static void restrict_rich(bs_task_t *t, int32_t nodes) {
  int32_t keep[8], seen = 0, points = 1;
  if (nodes > 8) nodes = 8;
  for (int32_t d = 0; d < t->D && seen < nodes; d++) {
    int32_t node = mi_space_dim_node(t->space, d), j = 0;
    if (node < 0 || mi_space_dim_kind(t->space, d) != MI_DIM_MODEL) continue;
    while (j < seen && keep[j] != node) j++;
    if (j == seen) keep[seen++] = node;
  }
  for (int32_t d = 0; d < t->D; d++) {
    int32_t node = mi_space_dim_node(t->space, d), j = 0;
    const char *name = mi_space_dim_name(t->space, d);
    while (j < seen && keep[j] != node) j++;
    if (node < 0)
      /* DVFS scales every configuration alike: left at its default to keep the table small. */
      t->frozen[d] = strncmp(name, "device.", 7) != 0 || !strcmp(name, "device.dvfs_level");
    else
      t->frozen[d] = !(j < seen && (mi_space_dim_kind(t->space, d) == MI_DIM_MODEL || strstr(name, ".knob.sram_tile")));
    if (!strcmp(name, "device.batch") || strstr(name, ".knob.arch")) t->frozen[d] = 1;
    if (!t->frozen[d]) {
      points *= mi_space_dim_size(t->space, d);
      fprintf(stderr, "bench_search: %s: free %s (%d values, %s)\n", t->name, name, (int)mi_space_dim_size(t->space, d),
              mi_space_dim_kind(t->space, d) == MI_DIM_MODEL ? "model" : "hardware");
    }
  }
  fprintf(stderr, "bench_search: %s: %d points before repair\n", t->name, (int)points);
}

static int32_t setup_task(bs_task_t *t, mi_registry_t *reg, const char *plugin, uint32_t dev,
                          uint32_t model_dims, int32_t nodes, const char *layers, const char *hw,
                          mi_error_t *err) {
  mi_space_options_t so;
  mi_model_features_t mf;
  int32_t rc;
  if (!(t->plugin = mi_registry_find(reg, plugin))) return mi_errorf(err, MI_ERR_NOT_FOUND, "no plugin %s", plugin);
  if ((rc = mi_onnx_load(t->model, &t->graph, err)) ||
      (t->inputs[0] && (rc = mi_graph_set_input_shapes(t->graph, t->inputs, t->name, err))) ||
      (rc = mi_graph_make_static(t->graph, NULL, err)))
    return rc;
  mi_space_options_default(&so);
  so.model_dims = model_dims;
  if ((rc = mi_space_create(t->graph, t->plugin, dev, &so, &t->space, err))) return rc;
  t->D = mi_space_dim_count(t->space);
  if (!(t->frozen = calloc((size_t)t->D, 1))) return MI_ERR_OUT_OF_MEMORY;
  if (t->real)
    /* The whole space but the batch (it changes the workload) and the ISA (the machine's). */
    for (int32_t d = 0; d < t->D; d++)
      t->frozen[d] = !strcmp(mi_space_dim_name(t->space, d), "device.batch") || strstr(mi_space_dim_name(t->space, d), ".knob.arch");
  else if (layers)
    bs_joint_restrict(t, layers, hw);
  else if (nodes > 1)
    restrict_rich(t, nodes);
  else
    restrict_space(t, nodes);
  memset(&mf, 0, sizeof mf);
  mi_model_features(t->graph, &mf, NULL, NULL, NULL);
  /* The device enters through its fingerprint (main measures it); until then, its index. */
  mi_meta_describe(&mf, NULL, t->desc);
  t->desc[MI_META_DESC_SIZE - 1] = dev;
  t->mf = mf;
  t->stack = mi_hash64(plugin, strlen(plugin), 0xcbf29ce484222325ull);
  t->ref = INFINITY;
  return MI_OK;
}

/* Fills the table: the whole restricted space (exhaustive) or a random pool. */
static void fill_table(bs_task_t *t, int exhaustive, int32_t pool) {
  mi_search_options_t o;
  mi_search_result_t *r = NULL;
  int32_t objs[1] = {MI_OBJ_LATENCY};
  bs_search_options(&o, 12345, pool, 1, objs, bs_evaluate, t, t->frozen);
  o.strategy = exhaustive ? MI_STRATEGY_EXHAUSTIVE : MI_STRATEGY_RANDOM;
  mi_search_run(t->space, &o, &r, NULL);
  mi_search_result_destroy(r);
}

/* Appends a row's node times to the task's per-layer table. */
static int layer_add(bs_task_t *t, int32_t row, const double *sec) {
  int32_t N = t->graph->node_count;
  int32_t *nr = realloc(t->lrow, (size_t)(t->ln + 1) * sizeof *nr);
  double *ns;
  if (!nr) return -1;
  t->lrow = nr;
  if (!(ns = realloc(t->lsec, (size_t)(t->ln + 1) * N * sizeof *ns))) return -1;
  t->lsec = ns;
  memcpy(t->lsec + (size_t)t->ln * N, sec, (size_t)N * sizeof *sec);
  t->lrow[t->ln++] = row;
  return 0;
}

/* Measures one configuration again with each node's time: the device clock when the plugin
 * has one (npu-stub), else the wall clock; nodes are matched to the graph by name. */
static int32_t measure_layers(bs_task_t *t, mi_worker_pool_t *pool, const int32_t *pt, double *sec,
                              mi_error_t *err) {
  mi_xf_config_t *xc = NULL;
  mi_space_hw_t *hw = NULL;
  mi_profile_t *prof = NULL;
  int32_t N = t->graph->node_count, rc;
  for (int32_t i = 0; i < N; i++) sec[i] = NAN;
  rc = mi_space_xf_config(t->space, pt, &xc, err);
  if (rc == MI_OK) rc = mi_space_hw_create(t->space, pt, &hw, err);
  if (rc == MI_OK) {
    rc = bench_profile(t, pool, xc, hw, &prof, NULL, err);
  }
  for (int32_t l = 0; rc == MI_OK && l < prof->layer_count; l++) {
    const mi_layer_profile_t *lp = &prof->layers[l];
    if (lp->where == 2) continue;
    for (int32_t nd = 0; nd < N; nd++)
      if (t->graph->nodes[nd].name && !strcmp(t->graph->nodes[nd].name, lp->name)) {
        sec[nd] = lp->has_device_time ? lp->device.median : lp->wall.median;
        break;
      }
  }
  mi_profile_destroy(prof);
  mi_space_hw_destroy(hw);
  mi_xf_config_destroy(xc);
  return rc;
}

/* Fills (or reads back from `path`) the per-layer table of every exhaustive task: `per_task`
 * rows each. */
static void layers_fill(bs_task_t *tasks, int32_t n, const char *path, int32_t per_task) {
  FILE *f = fopen(path, "r");
  char *line = malloc(1 << 16);
  if (!line) {
    if (f) fclose(f);
    return;
  }
  /* "TASK HASH NODES t0 t1 ..." lines (seconds, nan when not timed). */
  while (f && fgets(line, 1 << 16, f)) {
    char name[64], *p = line, *end;
    unsigned long long h;
    int nodes, used;
    if (sscanf(p, "%63s %llx %d%n", name, &h, &nodes, &used) != 3) continue;
    p += used;
    for (int32_t k = 0; k < n; k++) {
      bs_task_t *t = &tasks[k];
      int32_t row = strcmp(t->name, name) ? -1 : bs_find(t, h), nd;
      double sec[4096];
      if (row < 0 || nodes != t->graph->node_count || nodes > 4096 || t->ln >= per_task) continue;
      for (nd = 0; nd < nodes; nd++, p = end) {
        sec[nd] = strtod(p, &end);
        if (end == p) break;
      }
      if (nd == nodes) layer_add(t, row, sec);
    }
  }
  if (f) fclose(f);
  free(line);
  f = NULL;
  for (int32_t k = 0; k < n; k++) {
    bs_task_t *t = &tasks[k];
    mi_rng_t rng;
    int32_t N = t->graph->node_count, tries = 0, made = 0;
    double *sec;
    if (!t->exhaustive || !t->pool || t->n < per_task || t->ln >= per_task) continue;
    if (!(sec = malloc((size_t)N * sizeof *sec))) continue;
    if (!f) f = fopen(path, "a");
    mi_rng_seed(&rng, 4242u + (uint64_t)k);
    while (t->ln < per_task && tries++ < 20 * per_task) {
      int32_t row = (int32_t)mi_rng_below(&rng, (uint32_t)t->n), dup = !t->rows[row].ok;
      mi_error_t e;
      for (int32_t i = 0; i < t->ln && !dup; i++) dup = t->lrow[i] == row;
      if (dup || measure_layers(t, t->pool, t->rows[row].pt, sec, &e) != MI_OK) continue;
      layer_add(t, row, sec);
      made++;
      if (f) {
        fprintf(f, "%s %016llx %d", t->name, (unsigned long long)t->rows[row].hash, (int)N);
        for (int32_t nd = 0; nd < N; nd++) fprintf(f, " %.9g", sec[nd]);
        fprintf(f, "\n");
        fflush(f);
      }
    }
    fprintf(stderr, "bench_search: %s: %d configurations in the per-layer table (%d measured now)\n", t->name,
            (int)t->ln, (int)made);
    free(sec);
  }
  if (f) fclose(f);
}

int bs_report(bs_task_t *tasks, int32_t n, int32_t seeds);

/* The joint tasks' layers: the first conv of the last three residual blocks (the convs whose
 * channels can be pruned: the others feed a residual add), and with it the last block's second. */
#define JOINT_LAYERS3 "block1.conv1.conv,block2.conv1.conv,block3.conv1.conv"
#define JOINT_LAYERS4 JOINT_LAYERS3 ",block3.conv2.conv"
#define JOINT_PRUNABLE4 "block0.conv1.conv," JOINT_LAYERS3
#define JOINT_WHOLE "model.fuse,model.fold_bn"
#define JOINT_FUSE_DIMS (MI_SPACE_PRUNE | MI_SPACE_FUSE | MI_SPACE_FOLD_BN)

int main(int argc, char **argv) {
  /* nodes: 1 = the standard restriction; more = the rich one over that many layers (joint tasks:
   * `layers` instead, bench_joint.c). */
  /* set 0: always; 1: with MI_BENCH_RICH=1; 2: with MI_BENCH_JOINT=1 (joint tasks: the layers'
   * precision and pruning against the hardware knobs named in `hw`, with an accuracy-drop bound). */
  static const struct {
    const char *name, *file, *plugin;
    uint32_t dev;
    int exh, nodes, set;
    const char *layers, *hw;
    double energy_q; /* joint tasks: > 0, an energy bound at this quantile of the table's energy */
    uint32_t mdims;  /* joint tasks: the model-side dimensions (MI_SPACE_* bits) */
  } spec[] = {
      {"resnet-gen1", "resnet.onnx", "npu-stub", 0, 1, 1, 0, NULL, NULL, 0, 0}, {"resnet-gen2", "resnet.onnx", "npu-stub", 1, 1, 1, 0, NULL, NULL, 0, 0}, {"mbv2-gen1", "mobilenetv2.onnx", "npu-stub", 0, 1, 1, 0, NULL, NULL, 0, 0}, {"mbv2-gen2", "mobilenetv2.onnx", "npu-stub", 1, 1, 1, 0, NULL, NULL, 0, 0}, {"kws-gen1", "kws.onnx", "npu-stub", 0, 1, 1, 0, NULL, NULL, 0, 0}, {"kws-gen2", "kws.onnx", "npu-stub", 1, 1, 1, 0, NULL, NULL, 0, 0}, {"resnet-blis", "resnet.onnx", "blis-cpu", 0, 1, 1, 0, NULL, NULL, 0, 0},
      /* A second CPU task, so that resnet-blis has history from its own device to warm from. */
      {"kws-blis", "kws.onnx", "blis-cpu", 0, 1, 1, 0, NULL, NULL, 0, 0},
      {"resnet-rich1", "resnet.onnx", "npu-stub", 0, 1, 2, 1, NULL, NULL, 0, 0},
      {"resnet-rich2", "resnet.onnx", "npu-stub", 1, 1, 2, 1, NULL, NULL, 0, 0},
      {"mbv2-rich1", "mobilenetv2.onnx", "npu-stub", 0, 1, 2, 1, NULL, NULL, 0, 0},
      {"mbv2-rich2", "mobilenetv2.onnx", "npu-stub", 1, 1, 2, 1, NULL, NULL, 0, 0},
      {"kws-rich1", "kws.onnx", "npu-stub", 0, 1, 2, 1, NULL, NULL, 0, 0},
      {"kws-rich2", "kws.onnx", "npu-stub", 1, 1, 2, 1, NULL, NULL, 0, 0},
      /* Three layers' precision and pruning against the core count (6,912 configurations). */
      {"resnetw-prune1", "resnet-wide.onnx", "npu-stub", 0, 1, 2, 2, JOINT_LAYERS3, "cores", 0, MI_SPACE_PRECISION | MI_SPACE_PRUNE},
      {"resnetw-prune2", "resnet-wide.onnx", "npu-stub", 1, 1, 2, 2, JOINT_LAYERS3, "cores", 0, MI_SPACE_PRECISION | MI_SPACE_PRUNE},
      /* Four layers' precision against cores and DVFS under an energy bound too (5,120). */
      {"resnetw-energy1", "resnet-wide.onnx", "npu-stub", 0, 1, 2, 2, JOINT_LAYERS4, "cores,dvfs_level", 0.25, MI_SPACE_PRECISION},
      {"resnetw-energy2", "resnet-wide.onnx", "npu-stub", 1, 1, 2, 2, JOINT_LAYERS4, "cores,dvfs_level", 0.25, MI_SPACE_PRECISION},
      /* Four layers' pruning against the core count and those layers' dataflow (5,184). */
      {"resnetw-flow1", "resnet-wide.onnx", "npu-stub", 0, 1, 2, 2, JOINT_PRUNABLE4, "cores,dataflow", 0, MI_SPACE_PRUNE},
      {"resnetw-flow2", "resnet-wide.onnx", "npu-stub", 1, 1, 2, 2, JOINT_PRUNABLE4, "cores,dataflow", 0, MI_SPACE_PRUNE},
      /* Fusion and BN folding (fewer ops: less launch and per-core sync) and three layers'
       * pruning against cores and those layers' dataflow (3,456). */
      {"resnetw-fuse1", "resnet-wide.onnx", "npu-stub", 0, 1, 2, 2, JOINT_WHOLE "," JOINT_LAYERS3, "cores,dataflow", 0, JOINT_FUSE_DIMS},
      {"resnetw-fuse2", "resnet-wide.onnx", "npu-stub", 1, 1, 2, 2, JOINT_WHOLE "," JOINT_LAYERS3, "cores,dataflow", 0, JOINT_FUSE_DIMS}};
  const char *rich = getenv("MI_BENCH_RICH"), *joint = getenv("MI_BENCH_JOINT"), *real = getenv("MI_BENCH_REAL");
  const int real_mode = real && !strcmp(real, "1");
  int32_t n = 0, seeds = argc > 4 ? (int32_t)strtol(argv[4], NULL, 10) : 10;
  bs_task_t tasks[BS_MAX_TASKS];
  int32_t keep[BS_MAX_TASKS];
  mi_registry_t *reg = NULL;
  mi_worker_pool_t *pool = NULL;
  mi_worker_options_t wo;
  mi_error_t err;
  FILE *cache;
  int rc = 1;
  if (argc < 4) {
    fprintf(stderr, "usage: bench_search PLUGIN_DIR ZOO_DIR TABLE_FILE [SEEDS]\n");
    return 2;
  }
  memset(tasks, 0, sizeof tasks);
  for (int32_t k = 0; k < (int32_t)(sizeof spec / sizeof spec[0]) && n < BS_MAX_TASKS; k++) {
    /* MI_BENCH_REAL=1 runs the real-model tasks alone (their own report). */
    int on = real_mode ? 0 : spec[k].set == 0 || (spec[k].set == 1 && rich && !strcmp(rich, "1")) || (spec[k].set == 2 && joint && !strcmp(joint, "1"));
    /* With a task list, only the named tasks (the others are neither measured nor used as
     * history). */
    if (on && (argc <= 5 || strstr(argv[5], spec[k].name))) keep[n++] = k;
  }
  if (real_mode) {
    /* Real-model tasks: ZOO_DIR is then the models folder (tools/models/fetch.sh). */
    for (int32_t q = 0; bs_real_specs[q].name && n < BS_MAX_TASKS; q++) {
      if (argc > 5 && !strstr(argv[5], bs_real_specs[q].name)) continue;
      tasks[n].real = 1;
      keep[n++] = -1 - q;
    }
  }
  if (!(reg = mi_registry_create()) || mi_registry_scan(reg, argv[1], &err) != MI_OK) {
    fprintf(stderr, "bench_search: %s\n", err.message);
    goto done;
  }
  mi_worker_options_default(&wo);
  wo.plugin_dirs = argv[1];
  wo.timeout_s = 60;
  if (mi_worker_pool_create(&wo, &pool, &err) != MI_OK) {
    fprintf(stderr, "bench_search: workers: %s\n", err.message);
    goto done;
  }
  cache = fopen(argv[3], "a");
  for (int32_t k = 0; k < n; k++) {
    bs_task_t *t = &tasks[k];
    int32_t q = keep[k];
    if (q < 0) {
      const bs_real_spec_t *rs = &bs_real_specs[-1 - q];
      snprintf(t->name, sizeof t->name, "%s", rs->name);
      snprintf(t->model, sizeof t->model, "%s/%s", argv[2], rs->file);
      snprintf(t->spec, sizeof t->spec, "blis-cpu:0");
      snprintf(t->inputs, sizeof t->inputs, "%s", rs->inputs);
      if (setup_task(t, reg, "blis-cpu", 0, 0, 1, NULL, NULL, &err) != MI_OK) {
        fprintf(stderr, "bench_search: %s: %s\n", t->name, err.message);
        goto done;
      }
      continue;
    }
    snprintf(t->name, sizeof t->name, "%s", spec[q].name);
    snprintf(t->model, sizeof t->model, "%s/%s", argv[2], spec[q].file);
    snprintf(t->spec, sizeof t->spec, "%s:%u", spec[q].plugin, spec[q].dev);
    t->exhaustive = spec[q].exh;
    /* Experiment knobs for the joint tasks: MI_BENCH_JOINT_LAYERS and MI_BENCH_JOINT_HW replace
     * their layer and knob lists (use another MI_BENCH_DIR: the table does not record them). */
    const char *layers = spec[q].layers && getenv("MI_BENCH_JOINT_LAYERS") ? getenv("MI_BENCH_JOINT_LAYERS") : spec[q].layers;
    const char *hw = spec[q].layers && getenv("MI_BENCH_JOINT_HW") ? getenv("MI_BENCH_JOINT_HW") : spec[q].hw;
    if (setup_task(t, reg, spec[q].plugin, spec[q].dev, !strcmp(spec[q].plugin, "npu-stub") ? (spec[q].mdims ? spec[q].mdims : MI_SPACE_PRECISION) : 0,
                   spec[q].nodes, layers, hw, &err) != MI_OK) {
      fprintf(stderr, "bench_search: %s: %s\n", t->name, err.message);
      goto done;
    }
  }
  if (getenv("MI_BENCH_DESCRIBE") && !strcmp(getenv("MI_BENCH_DESCRIBE"), "1")) {
    int bad = 0, joint_tasks = 0;
    for (int32_t k = 0; k < n; k++)
      if (keep[k] >= 0 && spec[keep[k]].layers) {
        bad += bs_joint_describe(&tasks[k], spec[keep[k]].mdims);
        joint_tasks++;
      }
    rc = bad || joint_tasks == 0;
    if (cache) fclose(cache);
    goto done;
  }
  for (int32_t k = 0; k < n; k++) {
    /* Retrieval sees the device as mi-host tune does: its measured fingerprint (probe
     * latencies), once per device, in its crash-isolated worker. */
    mi_device_fingerprint_t fp;
    int32_t j;
    for (j = 0; j < k && strcmp(tasks[j].spec, tasks[k].spec); j++) continue;
    if (j < k) {
      memcpy(tasks[k].desc + MI_META_FP_OFFSET, tasks[j].desc + MI_META_FP_OFFSET,
             (MI_META_DESC_SIZE - MI_META_FP_OFFSET) * sizeof(double));
    } else if (mi_worker_fingerprint(pool, tasks[k].spec, &fp, &err) == MI_OK) {
      mi_meta_describe(&tasks[k].mf, &fp, tasks[k].desc);
    } else {
      fprintf(stderr, "bench_search: %s: no fingerprint (%s); the device index stands in\n", tasks[k].name, err.message);
    }
  }
  for (int32_t k = 0; k < n; k++) load_table(&tasks[k], 1, argv[3]);
  for (int32_t k = 0; k < n; k++) {
    bs_task_t *t = &tasks[k];
    t->pool = pool;
    t->cache = cache;
    if (t->real) continue; /* no table to fill: the methods measure what they visit */
    const int32_t cap = !t->exhaustive ? 96 : spec[keep[k]].layers ? 20000
                                                                   : 8000;
    fill_table(t, t->exhaustive, cap);
    fprintf(stderr, "bench_search: %s: %d configurations in the table (%d measured now), best %.4g ms\n",
            t->name, (int)t->n, (int)t->fresh, t->ref);
    if (t->exhaustive && t->n >= cap)
      fprintf(stderr,
              "bench_search: %s: warning: the exhaustive table stopped at its cap of %d "
              "configurations: the space may hold more, and the reference may not be its optimum\n",
              t->name, (int)cap);
  }
  {
    /* The per-layer table: next to the table file, "<table>.layers". */
    char lpath[4096];
    snprintf(lpath, sizeof lpath, "%s.layers", argv[3]);
    layers_fill(tasks, n, lpath, 96);
  }
  for (int32_t k = 0; k < n; k++)
    /* npu-stub tables are complete: a miss there would be a bug, so it must fail loudly. */
    if (tasks[k].exhaustive) tasks[k].pool = NULL;
  {
    /* Joint tasks: the accuracy drop of every model side ("<table>.accuracy"), the exhaustive
     * comparison at several bounds, then the bound the methods run under. */
    char apath[4096];
    int any = 0;
    snprintf(apath, sizeof apath, "%s.accuracy", argv[3]);
    for (int32_t k = 0; k < n; k++) {
      if (keep[k] < 0 || !spec[keep[k]].layers) continue;
      bs_accuracy_fill(&tasks[k], spec[keep[k]].dev, apath);
      bs_joint_exhaustive(tasks, n, k, spec[keep[k]].energy_q, !any);
      any = 1;
    }
  }
  if (real_mode) {
    const char *b = getenv("MI_BENCH_REAL_BUDGET");
    for (int32_t k = 0; k < n; k++) tasks[k].pool = pool; /* misses are measured */
    rc = bs_real_report(tasks, n, seeds, b ? (int32_t)strtol(b, NULL, 10) : 8);
  } else {
    rc = bs_report(tasks, n, seeds);
  }
  if (cache) fclose(cache);
done:
  for (int32_t k = 0; k < n; k++) {
    for (int32_t i = 0; i < tasks[k].n; i++) free(tasks[k].rows[i].pt);
    free(tasks[k].rows);
    free(tasks[k].lrow);
    free(tasks[k].lsec);
    free(tasks[k].acc_key);
    free(tasks[k].acc_val);
    free(tasks[k].frozen);
    mi_space_destroy(tasks[k].space);
    mi_graph_destroy(tasks[k].graph);
  }
  mi_worker_pool_destroy(pool);
  mi_registry_destroy(reg);
  return rc;
}
