/* test_exec_fallback.c - nodes the session's device refuses run on a fallback device (blis-cpu)
 * when the session names one (exec/fallback.c), what the fallback refuses too on the reference
 * interpreter; outputs equal the reference's either way. */
#include <math.h>

#include "test_exec_util.h"

/* x[2,16] -> Relu -> CumSum(axis 1) -> Scatter(axis 0, the two rows swapped) ->
 * Add(., relu) -> y. Only blis-cpu runs CumSum; no plugin runs Scatter, the opset 9-10 spelling
 * of ScatterElements (the reference does). */
static mi_graph_t *cumsum_rev(void) {
  mi_graph_t *g = mi_graph_create("fallback");
  int64_t d[2] = {2, 16}, axis = 1, rows[32];
  for (int i = 0; i < 32; i++) rows[i] = i < 16;
  REQUIRE(g);
  g->opset = 13;
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, d);
  int32_t ax = mi_graph_add_const_i64(g, "axis", 1, &axis);
  int32_t ln = mi_graph_add_tensor(g, "rows", MI_DTYPE_INT64, 2, d);
  REQUIRE(ln >= 0 && mi_graph_set_data(g, ln, rows, sizeof rows) == MI_OK);
  int32_t r = mi_graph_add_tensor(g, "r", MI_DTYPE_FLOAT32, 2, d);
  int32_t c = mi_graph_add_tensor(g, "c", MI_DTYPE_FLOAT32, 2, d);
  int32_t s = mi_graph_add_tensor(g, "s", MI_DTYPE_FLOAT32, 2, d);
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, 2, d);
  int32_t ic[2] = {r, ax}, ia[2] = {s, r}, iv[3] = {c, ln, c};
  REQUIRE(x >= 0 && ax >= 0 && ln >= 0 && r >= 0 && c >= 0 && s >= 0 && y >= 0);
  REQUIRE(mi_graph_add_input(g, x) == MI_OK && mi_graph_add_output(g, y) == MI_OK);
  REQUIRE(mi_graph_add_node(g, "Relu", "relu", 1, &x, 1, &r) >= 0);
  REQUIRE(mi_graph_add_node(g, "CumSum", "cumsum", 2, ic, 1, &c) >= 0);
  REQUIRE(mi_graph_add_node(g, "Scatter", "rev", 3, iv, 1, &s) >= 0);
  REQUIRE(mi_graph_add_node(g, "Add", "add", 2, ia, 1, &y) >= 0);
  return g;
}

static int32_t fallback_index(const mi_session_t *s, const char *name) {
  for (int32_t i = 0; i < mi_session_fallback_count(s); i++)
    if (!strcmp(mi_session_fallback_node(s, i), name)) return i;
  return -1;
}

static mi_session_t *with_fallback(const mi_graph_t *g, mi_plugin_t *p, uint32_t dev,
                                   mi_plugin_t *fb, uint32_t fb_dev) {
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 1;
  o.fallback_plugin = fb;
  o.fallback_device = fb_dev;
  if (mi_session_create(g, p, dev, &o, &s, &err) != MI_OK) die("mi_session_create", &err);
  return s;
}

/* On primary p: CumSum on blis-cpu, Scatter on the reference; without a fallback both on the
 * reference; the outputs the reference's within `tol` (npu-stub computes in FP16). */
static void check_primary(mi_registry_t *r, mi_plugin_t *p, uint32_t dev, double tol) {
  mi_plugin_t *blis = mi_registry_find(r, "blis-cpu"), *where = NULL, *fb = NULL;
  mi_graph_t *g = cumsum_rev();
  mi_array_t *x = input_for(g, 3), *want[1] = {0}, *got[1] = {0}, *old[1] = {0};
  uint32_t wd = 9, fd = 9;
  double e, eo;
  REQUIRE(blis && x);
  ref(g, x, want);
  /* The default pick (the first CPU plugin by name) is blis-cpu:0 for this primary. */
  CHECK(mi_registry_cpu_fallback(r, p, dev, &fb, &fd) == 1 && fb == blis && fd == 0,
        "%s: default fallback %s:%u", p->name, fb ? fb->name : "none", fd);
  mi_session_t *s = with_fallback(g, p, dev, blis, 0), *s0 = with_fallback(g, p, dev, NULL, 0);
  run(s, g, x, got);
  run(s0, g, x, old);
  e = tu_rel_l2_arrays(got[0], want[0]);
  eo = tu_rel_l2_arrays(old[0], want[0]);
  CHECK(e < tol, "%s + blis-cpu fallback vs reference: rel L2 %g (limit %g)", p->name, e, tol);
  CHECK(eo < tol, "%s without a fallback vs reference: rel L2 %g (limit %g)", p->name, eo, tol);
  /* Run twice: the fallback's buffers and kernel are reused. */
  mi_array_destroy(got[0]);
  got[0] = NULL;
  run(s, g, x, got);
  CHECK(tu_rel_l2_arrays(got[0], want[0]) < tol, "%s: second run differs", p->name);
  CHECK(mi_session_fallback_count(s) == 2, "%s: fallback nodes %d, expected 2 (cumsum, rev)",
        p->name, (int)mi_session_fallback_count(s));
  CHECK(mi_session_fallback_device_count(s) == 1, "%s: %d on the fallback device, expected 1",
        p->name, (int)mi_session_fallback_device_count(s));
  CHECK(fallback_index(s, "cumsum") >= 0 &&
            mi_session_fallback_where(s, fallback_index(s, "cumsum"), &where, &wd) == 1 &&
            where == blis && wd == 0,
        "%s: CumSum ran on blis-cpu:0", p->name);
  CHECK(fallback_index(s, "rev") >= 0 &&
            mi_session_fallback_where(s, fallback_index(s, "rev"), &where, &wd) == 0 && !where,
        "%s: Scatter, which blis-cpu refuses too, ran on the reference", p->name);
  CHECK(mi_session_fallback_count(s0) == 2 && mi_session_fallback_device_count(s0) == 0,
        "%s without a fallback: %d fallback nodes, %d on a device", p->name,
        (int)mi_session_fallback_count(s0), (int)mi_session_fallback_device_count(s0));
  /* The per-layer table names the fallback device for CumSum, the host for Scatter. */
  {
    double ms[4] = {1, 2, 3, 4};
    mi_layer_row_t *rows = NULL;
    int32_t n = 0, seen = 0;
    mi_error_t err = {0};
    REQUIRE(mi_layer_rows(g, s, NULL, ms, &rows, &n, &err) == MI_OK);
    for (int32_t i = 0; i < n; i++) {
      if (!strcmp(rows[i].name, "cumsum"))
        seen += rows[i].where == 2 && !strcmp(rows[i].variant, "fallback blis-cpu:0");
      if (!strcmp(rows[i].name, "rev")) seen += rows[i].where == 1 && !strcmp(rows[i].variant, "host");
    }
    CHECK(seen == 2, "%s: the profile rows of cumsum and rev", p->name);
    free(rows);
  }
  printf("%s: with blis-cpu fallback rel L2 %.3g, without %.3g\n", p->name, e, eo);
  mi_session_destroy(s);
  mi_session_destroy(s0);
  mi_array_destroy(x);
  mi_array_destroy(want[0]);
  mi_array_destroy(got[0]);
  mi_array_destroy(old[0]);
  mi_graph_destroy(g);
}

static void npu_stub_refusals_run_on_blis(void) {
  mi_registry_t *r = open_plugins();
  mi_plugin_t *npu = NULL;
  uint32_t dev = 0;
  tu_device_or_skip(r, "npu-stub", "npu-stub:0", &npu, &dev);
  check_primary(r, npu, dev, 1e-2);
  mi_registry_destroy(r);
}

static void opencl_and_vulkan_refusals_run_on_blis(void) {
  mi_registry_t *r = open_plugins();
  static const char *const specs[2] = {"opencl:0", "vulkan:0"};
  int ran = 0;
  for (int i = 0; i < 2; i++) {
    mi_plugin_t *p = NULL;
    uint32_t dev = 0;
    mi_error_t err = {0};
    if (mi_registry_device(r, specs[i], &p, &dev, &err) != MI_OK) {
      printf("%s: not here, skipped\n", specs[i]);
      continue;
    }
    check_primary(r, p, dev, 1e-4);
    ran++;
  }
  if (!ran) TU_SKIP("neither opencl:0 nor vulkan:0 is here");
  mi_registry_destroy(r);
}

/* x[1,2,6,6] -> Relu -> MaxPool(3x3, stride 1, pad 1) -> Equal(relu, pool) -> Cast(FLOAT) ->
 * Mul(., relu) -> y: M-LSD's peak mask. blis-cpu takes the Equal only with the Cast that alone
 * reads it, in one kernel: as nodes of their own it refuses both. */
static mi_graph_t *peak_mask(void) {
  mi_graph_t *g = mi_graph_create("peaks");
  int64_t d[4] = {1, 2, 6, 6}, k[2] = {3, 3}, st[2] = {1, 1}, pads[4] = {1, 1, 1, 1};
  REQUIRE(g);
  g->opset = 13;
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, d);
  int32_t r = mi_graph_add_tensor(g, "r", MI_DTYPE_FLOAT32, 4, d);
  int32_t m = mi_graph_add_tensor(g, "m", MI_DTYPE_FLOAT32, 4, d);
  int32_t e = mi_graph_add_tensor(g, "e", MI_DTYPE_BOOL, 4, d);
  int32_t c = mi_graph_add_tensor(g, "c", MI_DTYPE_FLOAT32, 4, d);
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, 4, d);
  int32_t ie[2] = {r, m}, im[2] = {c, r}, n;
  REQUIRE(x >= 0 && r >= 0 && m >= 0 && e >= 0 && c >= 0 && y >= 0);
  REQUIRE(mi_graph_add_input(g, x) == MI_OK && mi_graph_add_output(g, y) == MI_OK);
  REQUIRE(mi_graph_add_node(g, "Relu", "relu", 1, &x, 1, &r) >= 0);
  REQUIRE((n = mi_graph_add_node(g, "MaxPool", "pool", 1, &r, 1, &m)) >= 0);
  REQUIRE(mi_node_set_ints(g, n, "kernel_shape", 2, k) == MI_OK &&
          mi_node_set_ints(g, n, "strides", 2, st) == MI_OK &&
          mi_node_set_ints(g, n, "pads", 4, pads) == MI_OK);
  REQUIRE(mi_graph_add_node(g, "Equal", "eq", 2, ie, 1, &e) >= 0);
  REQUIRE((n = mi_graph_add_node(g, "Cast", "cast", 1, &e, 1, &c)) >= 0);
  REQUIRE(mi_node_set_int(g, n, "to", MI_DTYPE_FLOAT32) == MI_OK);
  REQUIRE(mi_graph_add_node(g, "Mul", "mul", 2, im, 1, &y) >= 0);
  return g;
}

/* A run of refused nodes goes to the fallback device as one sub-graph: the Equal and the Cast a
 * device refuses run on blis-cpu as its fused pair (one at a time, blis-cpu refuses both, and
 * the reference ran them), the outputs the reference's. */
static void refused_runs_go_as_one(void) {
  mi_registry_t *r = open_plugins();
  static const char *const specs[3] = {"opencl:0", "vulkan:0", "npu-stub:0"};
  mi_plugin_t *blis = mi_registry_find(r, "blis-cpu");
  mi_graph_t *g = peak_mask();
  mi_array_t *x = input_for(g, 5), *want[1] = {0};
  int grouped = 0;
  REQUIRE(blis && x);
  ref(g, x, want);
  for (int i = 0; i < 3; i++) {
    mi_plugin_t *p = NULL;
    uint32_t dev = 0;
    mi_error_t err = {0};
    mi_array_t *got[1] = {0};
    mi_session_t *s;
    int32_t ie, ic;
    double e;
    if (mi_registry_device(r, specs[i], &p, &dev, &err) != MI_OK) {
      printf("%s: not here, skipped\n", specs[i]);
      continue;
    }
    s = with_fallback(g, p, dev, blis, 0);
    for (int k = 0; k < 2; k++) { /* twice: the group's session is reused */
      mi_array_destroy(got[0]);
      got[0] = NULL;
      run(s, g, x, got);
      e = tu_rel_l2_arrays(got[0], want[0]);
      CHECK(e < (i == 2 ? 1e-2 : 1e-5), "%s: rel L2 %g against the reference", specs[i], e);
    }
    ie = fallback_index(s, "eq");
    ic = fallback_index(s, "cast");
    printf("%s: %d fallback nodes, %d on blis-cpu\n", specs[i], (int)mi_session_fallback_count(s),
           (int)mi_session_fallback_device_count(s));
    if (ie >= 0 && ic >= 0) {
      CHECK(mi_session_fallback_where(s, ie, NULL, NULL) == 1 && mi_session_fallback_where(s, ic, NULL, NULL) == 1,
            "%s: the refused Equal and Cast ran on blis-cpu as one group", specs[i]);
      CHECK(mi_session_fallback_device_count(s) == mi_session_fallback_count(s),
            "%s: %d of %d refused nodes on blis-cpu", specs[i], (int)mi_session_fallback_device_count(s),
            (int)mi_session_fallback_count(s));
      {
        double ms[5] = {1, 2, 3, 4, 5};
        mi_layer_row_t *rows = NULL;
        int32_t n = 0, seen = 0;
        REQUIRE(mi_layer_rows(g, s, NULL, ms, &rows, &n, &err) == MI_OK);
        for (int32_t j = 0; j < n; j++)
          seen += (!strcmp(rows[j].name, "eq") || !strcmp(rows[j].name, "cast")) && rows[j].where == 2;
        CHECK(seen == 2, "%s: the profile rows of eq and cast name the fallback device", specs[i]);
        free(rows);
      }
      grouped++;
    }
    mi_array_destroy(got[0]);
    mi_session_destroy(s);
  }
  mi_array_destroy(x);
  mi_array_destroy(want[0]);
  mi_graph_destroy(g);
  mi_registry_destroy(r);
  if (!grouped) TU_SKIP("no device here refuses both the Equal and the Cast");
}

/* x[4] -> Equal(x, 0) -> NonZero -> idx (a value-shaped output), z[2,16] -> CumSum -> c: on
 * npu-stub the NonZero and the CumSum are consecutive refused nodes, one group on blis-cpu (the
 * NonZero on the reference inside it). The create-time probe fixes idx at [1,4] (zero input). */
static mi_graph_t *value_shaped_run(void) {
  mi_graph_t *g = mi_graph_create("value_shaped_run");
  int64_t xd[1] = {4}, zd[2] = {2, 16}, axis = 1;
  float zero = 0.f;
  REQUIRE(g);
  g->opset = 13;
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 1, xd);
  int32_t z = mi_graph_add_tensor(g, "z", MI_DTYPE_FLOAT32, 2, zd);
  int32_t k0 = mi_graph_add_tensor(g, "zero", MI_DTYPE_FLOAT32, 1, (int64_t[]){1});
  int32_t ax = mi_graph_add_const_i64(g, "axis", 1, &axis);
  int32_t e = mi_graph_add_tensor(g, "e", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t idx = mi_graph_add_tensor(g, "idx", MI_DTYPE_UNDEFINED, -1, NULL);
  int32_t c = mi_graph_add_tensor(g, "c", MI_DTYPE_FLOAT32, 2, zd);
  int32_t ie[2] = {x, k0}, ic[2] = {z, ax};
  REQUIRE(x >= 0 && z >= 0 && k0 >= 0 && ax >= 0 && e >= 0 && idx >= 0 && c >= 0);
  REQUIRE(mi_graph_set_data(g, k0, &zero, sizeof zero) == MI_OK);
  REQUIRE(mi_graph_add_input(g, x) == MI_OK && mi_graph_add_input(g, z) == MI_OK);
  REQUIRE(mi_graph_add_output(g, idx) == MI_OK && mi_graph_add_output(g, c) == MI_OK);
  REQUIRE(mi_graph_add_node(g, "Equal", "eq", 2, ie, 1, &e) >= 0);
  REQUIRE(mi_graph_add_node(g, "NonZero", "nz", 1, &e, 1, &idx) >= 0);
  REQUIRE(mi_graph_add_node(g, "CumSum", "cumsum", 2, ic, 1, &c) >= 0);
  return g;
}

/* A group's outputs get the check a lone host step's get: a value-dependent shape other than
 * the one the session fixed at create time is refused when a later node reads it, and handed to
 * the caller as the run made it when only the caller does (idx here: [1,2], the probe's [1,4]). */
static void group_checks_probed_shapes(void) {
  mi_registry_t *r = open_plugins();
  mi_plugin_t *blis = mi_registry_find(r, "blis-cpu"), *p = NULL;
  mi_graph_t *g = value_shaped_run();
  int64_t xd[1] = {4}, zd[2] = {2, 16};
  float xv[4] = {1.5f, 0.f, 0.25f, 0.f};
  mi_array_t *x = mi_array_create(MI_DTYPE_FLOAT32, 1, xd), *z = mi_array_create(MI_DTYPE_FLOAT32, 2, zd);
  mi_array_t *got[2] = {0};
  const mi_array_t *ins[2] = {x, z};
  mi_error_t err = {0};
  uint32_t dev = 0;
  mi_session_t *s;
  int32_t rc;
  REQUIRE(blis && x && z);
  memcpy(x->data, xv, sizeof xv);
  memset(z->data, 0, z->nbytes);
  if (mi_registry_device(r, "npu-stub:0", &p, &dev, &err) != MI_OK) {
    TU_SKIP("npu-stub is not here");
    goto done;
  }
  s = with_fallback(g, p, dev, blis, 0);
  CHECK(fallback_index(s, "nz") >= 0 && fallback_index(s, "cumsum") >= 0, "NonZero and CumSum are refused");
  rc = mi_session_run(s, ins, 2, got, 2, &err);
  CHECK(rc == MI_OK && got[0] && got[0]->rank == 2 && got[0]->dims[0] == 1 && got[0]->dims[1] == 2 &&
            ((const int64_t *)got[0]->data)[0] == 1 && ((const int64_t *)got[0]->data)[1] == 3,
        "idx, read by no node, comes back as the run made it, [1,2] = {1, 3} (rc %d: %s)", (int)rc,
        err.message);
  mi_array_destroy(got[0]);
  mi_array_destroy(got[1]);
  mi_session_destroy(s);
done:
  mi_array_destroy(x);
  mi_array_destroy(z);
  mi_graph_destroy(g);
  mi_registry_destroy(r);
}

/* A CPU plugin's own refusals stay on the reference: it gets no default fallback. */
static void cpu_primary_gets_no_default(void) {
  mi_registry_t *r = open_plugins();
  mi_plugin_t *blis = mi_registry_find(r, "blis-cpu"), *fb = (mi_plugin_t *)1;
  uint32_t fd = 7;
  REQUIRE(blis);
  CHECK(mi_registry_cpu_fallback(r, blis, 0, &fb, &fd) == 0 && fb == NULL && fd == 0,
        "blis-cpu:0 got a default fallback");
  mi_registry_destroy(r);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(npu_stub_refusals_run_on_blis),
    TU_CASE(opencl_and_vulkan_refusals_run_on_blis),
    TU_CASE(cpu_primary_gets_no_default),
    TU_CASE(refused_runs_go_as_one),
    TU_CASE(group_checks_probed_shapes),
};

TU_MAIN(NULL, NULL)
