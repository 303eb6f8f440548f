/* test_ltask.c - layer tasks: two models with the same convolution (shapes, attributes,
 * epilogue) share its task key, other workloads do not; the task table round-trips through the
 * history (query, export, import); tuning a second model after a first one that shares tasks
 * measures fewer (task, choice) pairs than the same model cold; a model whose tasks are all new
 * starts them from the nearest measured ones and measures at most half as many; the chosen
 * kernels are the fastest the (synthetic) per-layer clock says. Runs on blis-cpu's real space. */
#include <math.h>

#include "metainfer/mi_ltask.h"
#include "metainfer/mi_meta.h"
#include "test_space_util.h"

/* x[1,3,12,12] -> Conv 3x3 (8) -> BN -> Relu -> Conv 1x1 (c2) -> Relu -> GAP -> Flatten ->
 * Gemm (10), at hw x hw; `tag` prefixes node names so the two models share no name. */
static mi_graph_t *cnn_hw(const char *tag, int64_t c2, int64_t hw) {
  static const int64_t w1d[4] = {8, 3, 3, 3}, bnd[1] = {8}, pads[4] = {1, 1, 1, 1};
  int64_t xd[4] = {1, 3, hw, hw};
  int64_t w2d[4] = {c2, 8, 1, 1}, wgd[2] = {10, c2}, bgd[1] = {10};
  float w1[8 * 27], w2[16 * 8], s[8], b[8], mu[8], var[8], wg[10 * 16], bg[10];
  mi_graph_t *g = mi_graph_create(tag);
  int32_t t[16], n;
  char nm[64];
  mi_error_t err;
  for (int i = 0; i < 8 * 27; i++) w1[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
  for (int i = 0; i < 16 * 8; i++) w2[i] = (float)((i * 13) % 11) / 11.0f - 0.5f;
  for (int i = 0; i < 160; i++) wg[i] = (float)((i * 7) % 19) / 19.0f - 0.5f;
  for (int i = 0; i < 8; i++) s[i] = 1.0f + 0.1f * (float)i, b[i] = 0.01f * (float)i, mu[i] = 0.02f, var[i] = 1.0f;
  for (int i = 0; i < 10; i++) bg[i] = 0.1f * (float)i;
#define NM(x) (snprintf(nm, sizeof nm, "%s_%s", tag, x), nm)
  t[0] = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd);
  mi_graph_add_input(g, t[0]);
  t[1] = mi_graph_add_const_f32(g, NM("w1"), 4, w1d, w1);
  t[2] = mi_graph_add_tensor(g, NM("c1"), MI_DTYPE_FLOAT32, -1, NULL);
  {
    int32_t in[2] = {t[0], t[1]};
    n = mi_graph_add_node(g, "Conv", NM("conv1"), 2, in, 1, &t[2]);
  }
  mi_node_set_ints(g, n, "pads", 4, pads);
  t[3] = mi_graph_add_const_f32(g, NM("bn_s"), 1, bnd, s);
  t[4] = mi_graph_add_const_f32(g, NM("bn_b"), 1, bnd, b);
  t[5] = mi_graph_add_const_f32(g, NM("bn_m"), 1, bnd, mu);
  t[6] = mi_graph_add_const_f32(g, NM("bn_v"), 1, bnd, var);
  t[7] = mi_graph_add_tensor(g, NM("bn"), MI_DTYPE_FLOAT32, -1, NULL);
  {
    int32_t in[5] = {t[2], t[3], t[4], t[5], t[6]};
    mi_graph_add_node(g, "BatchNormalization", NM("bn1"), 5, in, 1, &t[7]);
  }
  t[8] = mi_graph_add_tensor(g, NM("r1"), MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "Relu", NM("relu1"), 1, &t[7], 1, &t[8]);
  t[9] = mi_graph_add_const_f32(g, NM("w2"), 4, w2d, w2);
  t[10] = mi_graph_add_tensor(g, NM("c2"), MI_DTYPE_FLOAT32, -1, NULL);
  {
    int32_t in[2] = {t[8], t[9]};
    mi_graph_add_node(g, "Conv", NM("conv2"), 2, in, 1, &t[10]);
  }
  t[11] = mi_graph_add_tensor(g, NM("r2"), MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "Relu", NM("relu2"), 1, &t[10], 1, &t[11]);
  t[12] = mi_graph_add_tensor(g, NM("gap"), MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "GlobalAveragePool", NM("gap"), 1, &t[11], 1, &t[12]);
  t[13] = mi_graph_add_tensor(g, NM("flat"), MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_node(g, "Flatten", NM("flatten"), 1, &t[12], 1, &t[13]);
  t[14] = mi_graph_add_const_f32(g, NM("wg"), 2, wgd, wg);
  t[15] = mi_graph_add_const_f32(g, NM("bg"), 1, bgd, bg);
  {
    int32_t in[3] = {t[13], t[14], t[15]}, y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, -1, NULL);
    n = mi_graph_add_node(g, "Gemm", NM("fc"), 3, in, 1, &y);
    mi_node_set_int(g, n, "transB", 1);
    mi_graph_add_output(g, y);
  }
#undef NM
  if (mi_graph_toposort(g, &err) != MI_OK || mi_graph_infer_shapes(g, &err) != MI_OK) {
    fprintf(stderr, "cnn: %s\n", err.message);
    exit(1);
  }
  return g;
}

static int32_t node_named(const mi_graph_t *g, const char *name) {
  for (int32_t n = 0; n < g->node_count; n++)
    if (!strcmp(g->nodes[n].name, name)) return n;
  return -1;
}

static mi_graph_t *cnn(const char *tag, int64_t c2) { return cnn_hw(tag, c2, 12); }

/* A synthetic per-layer clock: each node's time depends on its op and its kernel choice only,
 * the same on every model; counts the calls. */
typedef struct {
  const mi_graph_t *g;
  const mi_space_t *s;
  int32_t calls;
} clock_t_;

static double choice_time(const char *op, const char *choice) {
  char key[512];
  snprintf(key, sizeof key, "%s|%s", op, choice);
  return 1e-4 * (1.0 + (double)(mi_hash64(key, strlen(key), 77) % 1000) / 100.0);
}

static int32_t fake_measure(void *ctx, const int32_t *pt, double *node_s, mi_error_t *err) {
  clock_t_ *c = ctx;
  (void)err;
  c->calls++;
  for (int32_t n = 0; n < c->g->node_count; n++) {
    char *ch = mi_ltask_choice(c->s, pt, n);
    node_s[n] = ch && ch[0] ? choice_time(c->g->nodes[n].op_type, ch) : 1e-5;
    free(ch);
  }
  return MI_OK;
}

/* Options measuring with the synthetic clock c (reset) on g and s, "dev0"/"stack0" in history h. */
static void fake_options(mi_ltask_options_t *o, mi_history_t *h, clock_t_ *c, const mi_graph_t *g,
                         const mi_space_t *s) {
  c->g = g;
  c->s = s;
  c->calls = 0;
  mi_ltask_options_default(o);
  o->history = h;
  o->device_hash = "dev0";
  o->stack_hash = "stack0";
  o->measure = fake_measure;
  o->measure_ctx = c;
}

typedef struct {
  const char *choice; /* the chosen one */
  double best, chosen;
} best_t;

static int count_rows(void *user, const mi_ltask_row_t *row) {
  (*(int *)user)++;
  return row == NULL;
}

/* The fastest a task's choices measured in the table, by the synthetic clock. */
static int min_row(void *user, const mi_ltask_row_t *row) {
  best_t *b = user;
  if (row->ok && row->seconds < b->best) b->best = row->seconds;
  if (row->ok && !strcmp(row->choice, b->choice)) b->chosen = row->seconds;
  return 0;
}

static int32_t tune(mi_registry_t *r, const mi_graph_t *g, mi_history_t *h, mi_ltask_result_t *res,
                    mi_ltasks_t **tasks_out, mi_space_t **s_out) {
  mi_plugin_t *p = mi_registry_find(r, "blis-cpu");
  mi_space_t *s = NULL;
  mi_ltasks_t *t = NULL;
  mi_ltask_options_t o;
  mi_error_t err;
  int32_t *base, rc;
  clock_t_ c;
  REQUIRE(p != NULL);
  REQUIRE(mi_space_create(g, p, 0, NULL, &s, &err) == MI_OK);
  base = calloc((size_t)mi_space_dim_count(s) + 1, sizeof *base);
  mi_space_default(s, base);
  mi_space_repair(s, base, NULL, NULL);
  REQUIRE(mi_ltasks_extract(g, s, base, &t, &err) == MI_OK);
  fake_options(&o, h, &c, g, s);
  rc = mi_ltasks_tune(g, s, t, base, &o, res, &err);
  CHECK(rc == MI_OK, "%s", err.message);
  CHECK(res->rounds == c.calls, "rounds %d, measurements %d", (int)res->rounds, (int)c.calls);
  free(base);
  *tasks_out = t;
  *s_out = s;
  return rc;
}

/* The joint search over a space whose kernel dimensions the layer tasks hold: the plain default
 * is measured first, then the default with the held values, and every later point keeps them. */
static int32_t fake_eval(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj, mi_error_t *err) {
  (void)ctx;
  (void)err;
  for (int j = 0; j < MI_OBJ_COUNT; j++) obj[j] = NAN;
  obj[MI_OBJ_LATENCY] = 1.0 + (double)(mi_space_hash(s, pt) % 1000) / 1000.0;
  return MI_OK;
}

static void test_held_search(mi_registry_t *r, const mi_graph_t *g) {
  mi_plugin_t *p = mi_registry_find(r, "blis-cpu");
  mi_space_t *s = NULL;
  mi_ltasks_t *t = NULL;
  mi_search_result_t *res = NULL;
  mi_search_options_t o;
  mi_meta_options_t mo;
  mi_error_t err;
  int32_t D, *def, *fixed, vd = -1, obj = MI_OBJ_LATENCY, c1 = node_named(g, "a_conv1");
  uint8_t *frozen;
  REQUIRE(p && mi_space_create(g, p, 0, NULL, &s, &err) == MI_OK);
  D = mi_space_dim_count(s);
  def = calloc((size_t)D, sizeof *def);
  fixed = calloc((size_t)D, sizeof *fixed);
  frozen = calloc((size_t)D, 1);
  mi_space_default(s, def);
  mi_space_repair(s, def, NULL, NULL);
  REQUIRE(mi_ltasks_extract(g, s, def, &t, &err) == MI_OK);
  CHECK(mi_ltasks_frozen(s, t, frozen) > 0, "no held dimension");
  memcpy(fixed, def, (size_t)D * sizeof *fixed);
  for (int32_t d = 0; d < D; d++)
    if (mi_space_dim_node(s, d) == c1 && mi_space_dim_kind(s, d) == MI_DIM_VARIANT) vd = d;
  REQUIRE(vd >= 0 && mi_space_dim_size(s, vd) > 1);
  fixed[vd] = (def[vd] + 1) % mi_space_dim_size(s, vd);
  mi_space_repair(s, fixed, NULL, NULL);
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.seed = 3;
  o.max_measurements = 6;
  o.objective_count = 1;
  o.objectives = &obj;
  o.evaluate = fake_eval;
  mi_meta_options_default(&mo);
  mo.frozen = frozen;
  mo.fixed = fixed;
  mo.init_points = 3;
  mo.batch = 2;
  mo.screen = 200;
  REQUIRE(mi_meta_search_run(s, &o, &mo, &res, &err) == MI_OK);
  CHECK(res->count >= 3, "%d trials", (int)res->count);
  CHECK(res->trials[0].hash == mi_space_hash(s, def), "the plain default is not the first trial");
  CHECK(res->trials[1].point[vd] == fixed[vd], "the second trial does not hold the tasks' choice");
  for (int32_t i = 1; i < res->count; i++)
    for (int32_t d = 0; d < D; d++)
      if (frozen[d] && mi_space_active(s, res->trials[i].point, d))
        CHECK(res->trials[i].point[d] == fixed[d], "trial %d moved held dimension %s", (int)i, mi_space_dim_name(s, d));
  mi_search_result_destroy(res);
  mi_ltasks_destroy(t);
  mi_space_destroy(s);
  free(def);
  free(fixed);
  free(frozen);
}

static void tasks_history_search(void) {
  mi_registry_t *r = tsu_registry();
  mi_graph_t *a = cnn("a", 8), *b = cnn("b", 16);
  mi_history_t *h = NULL, *hc = NULL, *h2 = NULL;
  mi_error_t err;
  mi_ltask_result_t ra, rb, rcold;
  mi_ltasks_t *ta, *tb, *tc;
  mi_space_t *sa, *sb, *sc;
  char dir[128], db[256], dbc[256], db2[256], jl[256];
  int32_t a1 = node_named(a, "a_conv1"), b1 = node_named(b, "b_conv1");
  int32_t a2 = node_named(a, "a_conv2"), b2 = node_named(b, "b_conv2");
  REQUIRE(tu_tempdir(dir, sizeof dir, "ltask"));
  /* Keys: the same conv (and epilogue) in two models is one text; a conv of another width not. */
  {
    char *x = mi_ltask_text(a, a1, NULL, NULL), *y = mi_ltask_text(b, b1, NULL, NULL);
    char *u = mi_ltask_text(a, a2, NULL, NULL), *v = mi_ltask_text(b, b2, NULL, NULL);
    char *q = mi_ltask_text(a, a1, "int8_channel", NULL);
    REQUIRE(x && y && u && v && q);
    CHECK(strcmp(x, y) == 0, "'%s' vs '%s'", x, y);
    CHECK(strcmp(u, v) != 0, "conv2 of 8 and 16 channels share '%s'", u);
    CHECK(strcmp(x, q) != 0, "precision is part of the key");
    CHECK(strstr(x, " +BatchNormalization") && strstr(x, " +Relu"), "epilogue in '%s'", x);
    free(x), free(y), free(u), free(v), free(q);
  }
  snprintf(db, sizeof db, "%s/h.db", dir);
  snprintf(dbc, sizeof dbc, "%s/cold.db", dir);
  snprintf(db2, sizeof db2, "%s/h2.db", dir);
  snprintf(jl, sizeof jl, "%s/h.jsonl", dir);
  REQUIRE(mi_history_open(db, &h, &err) == MI_OK);
  REQUIRE(mi_history_open(dbc, &hc, &err) == MI_OK);
  /* Model a, then model b with a's history; and b cold for comparison. */
  tune(r, a, h, &ra, &ta, &sa);
  tune(r, b, h, &rb, &tb, &sb);
  tune(r, b, hc, &rcold, &tc, &sc);
  fprintf(stderr,
          "a: %d tasks, %d layer measurements in %d rounds; b after a: %d reused, %d measured, %d layer "
          "measurements; b cold: %d layer measurements\n",
          (int)ra.tasks, (int)ra.layer_measurements, (int)ra.rounds,
          (int)rb.reused, (int)rb.measured_tasks, (int)rb.layer_measurements, (int)rcold.layer_measurements);
  CHECK(ta->count >= 2 && ra.reused == 0 && ra.layer_measurements > ta->count, "a: %d tasks", (int)ta->count);
  /* The shared conv task has one key in both models and is taken from the history. */
  CHECK(ta->node_task[a1] >= 0 && tb->node_task[b1] >= 0 &&
            !strcmp(ta->tasks[ta->node_task[a1]].key, tb->tasks[tb->node_task[b1]].key),
        "conv1 keys differ");
  CHECK(rb.reused >= 1, "b reused %d tasks", (int)rb.reused);
  CHECK(rcold.reused == 0 && rb.layer_measurements < rcold.layer_measurements, "b after a %d, cold %d",
        (int)rb.layer_measurements, (int)rcold.layer_measurements);
  /* The shared task's choice in b is a's best, which is the fastest row measured for it. */
  {
    const mi_ltask_t *k = &ta->tasks[ta->node_task[a1]];
    char *ca = mi_ltask_choice(sa, ra.point, a1), *cb = mi_ltask_choice(sb, rb.point, b1);
    best_t bt = {ca, INFINITY, NAN};
    REQUIRE(ca && cb);
    CHECK(!strcmp(ca, cb), "a chose '%s', b '%s'", ca, cb);
    mi_history_ltask_query(h, "dev0", "stack0", NULL, k->key, min_row, &bt, &err);
    CHECK(isfinite(bt.best) && bt.chosen == bt.best, "chose %g, best row %g", bt.chosen, bt.best);
    free(ca), free(cb);
  }
  /* The table round-trips: export, import into a fresh file (twice: nothing added the second
   * time), the same rows. */
  {
    FILE *f = fopen(jl, "w");
    int64_t n = 0, added = 0, skipped = 0;
    int rows = 0, rows2 = 0;
    REQUIRE(f && mi_history_export(h, f, &n, &err) == MI_OK);
    fclose(f);
    mi_history_ltask_query(h, NULL, NULL, NULL, NULL, count_rows, &rows, &err);
    CHECK(rows > 0 && n == rows, "exported %lld lines, %d rows", (long long)n, rows);
    REQUIRE(mi_history_open(db2, &h2, &err) == MI_OK);
    f = fopen(jl, "r");
    CHECK(f && mi_history_import(h2, f, &added, &skipped, &err) == MI_OK && added == rows && skipped == 0,
          "import: %lld added: %s", (long long)added, err.message);
    if (f) fclose(f);
    f = fopen(jl, "r");
    CHECK(f && mi_history_import(h2, f, &added, &skipped, &err) == MI_OK && added == 0 && skipped == rows,
          "second import added %lld", (long long)added);
    if (f) fclose(f);
    mi_history_ltask_query(h2, "dev0", "stack0", NULL, NULL, count_rows, &rows2, &err);
    CHECK(rows2 == rows, "%d rows after import, %d before", rows2, rows);
  }
  mi_ltask_result_free(&ra);
  mi_ltask_result_free(&rb);
  mi_ltask_result_free(&rcold);
  mi_ltasks_destroy(ta);
  mi_ltasks_destroy(tb);
  mi_ltasks_destroy(tc);
  mi_space_destroy(sa);
  mi_space_destroy(sb);
  mi_space_destroy(sc);
  mi_history_close(h);
  mi_history_close(hc);
  mi_history_close(h2);
  mi_graph_destroy(a);
  mi_graph_destroy(b);
  {
    mi_graph_t *c = cnn("a", 8);
    test_held_search(r, c);
    mi_graph_destroy(c);
  }
  mi_registry_destroy(r);
  tu_rmtree(dir);
}

/* The nearest-task warm start: after the same network at 12x12 and at 20x20, the network at
 * 16x16 (no conv key in common, the Gemm after the pooling is the same task) starts each conv
 * from its two nearest measured tasks; they agree (the synthetic clock depends on the choice,
 * not the shape), so it measures only their choice beside the default: at most half the layer
 * measurements of a run with no history, and the same choices that cold run makes. */
static void warm_start_from_neighbours(void) {
  mi_registry_t *r = tsu_registry();
  mi_graph_t *a = cnn_hw("a", 8, 12), *b = cnn_hw("b", 8, 20), *c = cnn_hw("c", 8, 16);
  mi_history_t *h = NULL, *hc = NULL;
  mi_ltask_result_t ra, rb, rc, rcold;
  mi_ltasks_t *ta, *tb, *tc, *tcold;
  mi_space_t *sa, *sb, *sc, *scold;
  char dir[128], db[256], dbc[256];
  mi_error_t err;
  REQUIRE(tu_tempdir(dir, sizeof dir, "ltaskwarm"));
  snprintf(db, sizeof db, "%s/h.db", dir);
  snprintf(dbc, sizeof dbc, "%s/cold.db", dir);
  REQUIRE(mi_history_open(db, &h, &err) == MI_OK);
  REQUIRE(mi_history_open(dbc, &hc, &err) == MI_OK);
  tune(r, a, h, &ra, &ta, &sa);
  tune(r, b, h, &rb, &tb, &sb);
  tune(r, c, h, &rc, &tc, &sc);
  tune(r, c, hc, &rcold, &tcold, &scold);
  fprintf(stderr,
          "c after a and b: %d tasks, %d from the history, %d warm (%d agreed), %d cold; %d layer measurements "
          "(%d warm) against %d for a run with no history (c cold: %d)\n",
          (int)rc.tasks, (int)rc.reused, (int)rc.warm, (int)rc.agreed, (int)rc.cold, (int)rc.layer_measurements,
          (int)rc.warm_layer_measurements, (int)rc.cold_run_layer_measurements, (int)rcold.layer_measurements);
  CHECK(ra.warm == 0 && ra.cold == ra.tasks, "a: %d warm of %d", (int)ra.warm, (int)ra.tasks);
  CHECK(rcold.warm == 0 && rcold.cold_run_layer_measurements == rcold.layer_measurements,
        "cold: %d warm, %d against %d", (int)rcold.warm, (int)rcold.cold_run_layer_measurements,
        (int)rcold.layer_measurements);
  CHECK(rc.agreed >= 2 && rc.reused >= 1 && rc.reused + rc.warm + rc.cold == rc.tasks,
        "c: %d agreed, %d reused, %d warm, %d cold of %d", (int)rc.agreed, (int)rc.reused, (int)rc.warm,
        (int)rc.cold, (int)rc.tasks);
  CHECK(rc.cold_run_layer_measurements == rcold.layer_measurements, "cold-run count %d, measured cold %d",
        (int)rc.cold_run_layer_measurements, (int)rcold.layer_measurements);
  CHECK(2 * rc.layer_measurements <= rcold.layer_measurements, "warm %d layer measurements, cold %d",
        (int)rc.layer_measurements, (int)rcold.layer_measurements);
  /* The warm start loses nothing here: every node runs what the cold run chose. */
  for (int32_t n = 0; n < c->node_count; n++) {
    char *x = mi_ltask_choice(sc, rc.point, n), *y = mi_ltask_choice(scold, rcold.point, n);
    CHECK(x && y && !strcmp(x, y), "%s: warm '%s', cold '%s'", c->nodes[n].name, x ? x : "?", y ? y : "?");
    free(x), free(y);
  }
  mi_ltask_result_free(&ra), mi_ltask_result_free(&rb), mi_ltask_result_free(&rc), mi_ltask_result_free(&rcold);
  mi_ltasks_destroy(ta), mi_ltasks_destroy(tb), mi_ltasks_destroy(tc), mi_ltasks_destroy(tcold);
  mi_space_destroy(sa), mi_space_destroy(sb), mi_space_destroy(sc), mi_space_destroy(scold);
  mi_history_close(h), mi_history_close(hc);
  mi_graph_destroy(a), mi_graph_destroy(b), mi_graph_destroy(c);
  mi_registry_destroy(r);
  tu_rmtree(dir);
}

/* Attributes at their ONNX default, written by one exporter and left out by another, do not
 * split a workload into two tasks; a value that is not the default still does. */
static void default_attributes(void) {
  static const int64_t ones[2] = {1, 1}, twos[2] = {2, 2};
  mi_graph_t *a = cnn("a", 8), *b = cnn("b", 8), *c = cnn("c", 8);
  int32_t a1 = node_named(a, "a_conv1"), b1 = node_named(b, "b_conv1"), c1 = node_named(c, "c_conv1");
  char *x, *y, *z;
  mi_error_t err;
  REQUIRE(a1 >= 0 && b1 >= 0 && c1 >= 0);
  REQUIRE(mi_node_set_ints(b, b1, "dilations", 2, ones) == MI_OK && mi_node_set_ints(b, b1, "strides", 2, ones) == MI_OK &&
          mi_node_set_int(b, b1, "group", 1) == MI_OK && mi_node_set_string(b, b1, "auto_pad", "NOTSET") == MI_OK);
  REQUIRE(mi_node_set_ints(c, c1, "dilations", 2, twos) == MI_OK && mi_graph_infer_shapes(c, &err) == MI_OK);
  x = mi_ltask_text(a, a1, NULL, NULL), y = mi_ltask_text(b, b1, NULL, NULL), z = mi_ltask_text(c, c1, NULL, NULL);
  REQUIRE(x && y && z);
  CHECK(strcmp(x, y) == 0, "defaults written: '%s' vs '%s'", y, x);
  CHECK(strstr(x, "dilations") == NULL && strstr(x, "pads=1:1:1:1"), "'%s'", x);
  CHECK(strcmp(x, z) != 0 && strstr(z, "dilations=2:2"), "dilation 2 is another task: '%s'", z);
  free(x), free(y), free(z);
  mi_graph_destroy(a), mi_graph_destroy(b), mi_graph_destroy(c);
}

typedef struct {
  const char *base_pw; /* the default's pointwise part */
  int rows, pw_changed;
} pw_rows_t;

static int pw_row(void *user, const mi_ltask_row_t *row) {
  pw_rows_t *w = user;
  const char *bar = strstr(row->choice, " | ");
  w->rows++;
  w->pw_changed += bar && strcmp(bar + 3, w->base_pw) != 0;
  return 0;
}

/* On a device that runs a depthwise conv and the pointwise conv reading it as one kernel
 * (MI_FUSE_CONV), the pair is one layer task: its workload is the group, its time the group's,
 * and its candidates change the pointwise conv's variant too (what the unit runs with its
 * member choice). Without fusion they stay two tasks. */
static void dwpw_unit_task(void) {
  mi_registry_t *r = tsu_registry();
  mi_plugin_t *p = mi_registry_find(r, "blis-cpu");
  mi_graph_t *g = tsu_dwpw(8, 16, 12);
  int32_t dw = node_named(g, "dw"), pw = node_named(g, "pw"), *base, k;
  mi_space_t *s = NULL;
  mi_ltasks_t *t1 = NULL, *t2 = NULL;
  mi_ltask_options_t o;
  mi_ltask_result_t res;
  mi_history_t *h = NULL;
  clock_t_ c;
  char dir[128], db[256], *pwc;
  pw_rows_t w = {NULL, 0, 0};
  mi_error_t err;
  REQUIRE(p && dw >= 0 && pw >= 0 && mi_space_create(g, p, 0, NULL, &s, &err) == MI_OK);
  base = calloc((size_t)mi_space_dim_count(s) + 1, sizeof *base);
  mi_space_default(s, base);
  mi_space_repair(s, base, NULL, NULL);
  REQUIRE(mi_ltasks_extract(g, s, base, &t1, &err) == MI_OK);
  REQUIRE(mi_ltasks_extract_fused(g, s, base, 1, &t2, &err) == MI_OK);
  CHECK(t1->node_task[dw] >= 0 && t1->node_task[pw] >= 0 && t1->node_task[dw] != t1->node_task[pw],
        "unfused: two tasks (%d, %d)", (int)t1->node_task[dw], (int)t1->node_task[pw]);
  REQUIRE(t2->count == 1 && t2->node_task[dw] == 0 && t2->node_task[pw] == 0);
  k = 0;
  CHECK(!strcmp(t2->tasks[k].op, "Conv+Conv") && t2->tasks[k].second && t2->tasks[k].second[0] == pw &&
            strstr(t2->tasks[k].text, " >> Conv"),
        "fused task: op %s, text %s", t2->tasks[k].op, t2->tasks[k].text);
  REQUIRE(tu_tempdir(dir, sizeof dir, "ltaskdwpw"));
  snprintf(db, sizeof db, "%s/h.db", dir);
  REQUIRE(mi_history_open(db, &h, &err) == MI_OK);
  fake_options(&o, h, &c, g, s);
  REQUIRE(mi_ltasks_tune(g, s, t2, base, &o, &res, &err) == MI_OK);
  pwc = mi_ltask_choice(s, base, pw);
  w.base_pw = pwc ? pwc : "";
  mi_history_ltask_query(h, "dev0", "stack0", NULL, t2->tasks[k].key, pw_row, &w, NULL);
  fprintf(stderr, "dw+pw task: %d rows, %d with another pointwise choice; %d rounds\n", w.rows, w.pw_changed,
          (int)res.rounds);
  CHECK(w.rows >= 3 && w.pw_changed >= 1, "%d rows, %d change the pointwise conv", w.rows, w.pw_changed);
  free(pwc);
  mi_ltask_result_free(&res);
  mi_history_close(h);
  tu_rmtree(dir);
  free(base);
  mi_ltasks_destroy(t1), mi_ltasks_destroy(t2);
  mi_space_destroy(s);
  mi_graph_destroy(g);
  mi_registry_destroy(r);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(dwpw_unit_task),
    TU_CASE(tasks_history_search),
    TU_CASE(default_attributes),
    TU_CASE(warm_start_from_neighbours),
};

TU_MAIN(NULL, NULL)
