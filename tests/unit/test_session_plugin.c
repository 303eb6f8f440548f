/* test_session_plugin.c - sessions on the SDK template plugin (Relu and Add only): device
 * kernels, host fallback for what it refuses, folded shape ops, choices, and clean failures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi.h"

#include "test_util.h"

static const int64_t k_dims[4] = {2, 3, 4, 4};

static int32_t act(mi_graph_t *g, const char *name) {
  return mi_graph_add_tensor(g, name, MI_DTYPE_FLOAT32, -1, NULL);
}

static int32_t node2(mi_graph_t *g, const char *op, const char *name, int32_t a, int32_t b,
                     int32_t out) {
  int32_t in[2] = {a, b};
  return mi_graph_add_node(g, op, name, 2, in, 1, &out);
}

/* x, y -> r = Relu(x) -> a = Add(r, y) -> s = Sigmoid(a) -> z = Add(s, x); outputs s and z.
 * Sigmoid is not in the template: it runs on the host between two device kernels. */
static mi_graph_t *graph_relu_add_sigmoid(void) {
  mi_graph_t *g = mi_graph_create("relu_add_sigmoid");
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, k_dims);
  int32_t y = mi_graph_add_tensor(g, "y", MI_DTYPE_FLOAT32, 4, k_dims);
  int32_t r = act(g, "r"), a = act(g, "a"), s = act(g, "s"), z = act(g, "z");
  mi_graph_add_input(g, x);
  mi_graph_add_input(g, y);
  mi_graph_add_node(g, "Relu", "relu", 1, &x, 1, &r);
  node2(g, "Add", "add", r, y, a);
  mi_graph_add_node(g, "Sigmoid", "sig", 1, &a, 1, &s);
  node2(g, "Add", "add2", s, x, z);
  mi_graph_add_output(g, s);
  mi_graph_add_output(g, z);
  return g;
}

/* x -> Shape -> Reshape(x, shape) -> Relu -> Add(const) ; the Shape is folded at create time,
 * Reshape and the Add with a constant operand fall back to the host. */
static mi_graph_t *graph_shape_const(void) {
  mi_graph_t *g = mi_graph_create("shape_const");
  float c[96];
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, k_dims);
  int32_t sh = mi_graph_add_tensor(g, "sh", MI_DTYPE_INT64, -1, NULL);
  int32_t rs = act(g, "rs"), r = act(g, "r"), o = act(g, "o"), k;
  for (int i = 0; i < 96; i++) c[i] = (float)i / 96.0f - 0.5f;
  k = mi_graph_add_const_f32(g, "c", 4, k_dims, c);
  mi_graph_add_input(g, x);
  mi_graph_add_node(g, "Shape", "shape", 1, &x, 1, &sh);
  node2(g, "Reshape", "reshape", x, sh, rs);
  mi_graph_add_node(g, "Relu", "relu", 1, &rs, 1, &r);
  node2(g, "Add", "addc", r, k, o);
  mi_graph_add_output(g, o);
  return g;
}

/* Runs g on the session and on mi_ref_run with the same inputs; outputs must be identical. */
static void compare_with_ref(const char *label, mi_graph_t *g, mi_session_t *s, int n_in,
                             int n_out) {
  mi_array_t *in[2] = {0}, *want[2] = {0}, *got[2] = {0};
  mi_error_t err = {0};
  for (int i = 0; i < n_in; i++) {
    in[i] = mi_array_create(MI_DTYPE_FLOAT32, 4, k_dims);
    mi_array_fill_random(in[i], 100u + (unsigned)i);
  }
  CHECK(mi_ref_run(g, (const mi_array_t *const *)in, n_in, want, n_out, &err) == MI_OK,
        "%s: ref: %s", label, err.message);
  for (int run = 0; run < 2; run++) {
    int32_t rc = mi_session_run(s, (const mi_array_t *const *)in, n_in, got, n_out, &err);
    CHECK(rc == MI_OK, "%s: run: %s", label, err.message);
    for (int i = 0; i < n_out && rc == MI_OK; i++) {
      CHECK(got[i] && want[i] && got[i]->nbytes == want[i]->nbytes &&
                memcmp(got[i]->data, want[i]->data, want[i]->nbytes) == 0,
            "%s: output %d differs from the reference", label, i);
      mi_array_destroy(got[i]);
      got[i] = NULL;
    }
  }
  for (int i = 0; i < 2; i++) {
    mi_array_destroy(in[i]);
    mi_array_destroy(want[i]);
  }
}

static mi_session_options_t options(void) {
  mi_session_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  o.allow_host_fallback = 1;
  return o;
}

static void fallback_and_boundaries(mi_plugin_t *p) {
  mi_graph_t *g = graph_relu_add_sigmoid();
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  uint64_t ns = 0;
  /* No shape inference here: the session infers shapes on a private copy. */
  CHECK(mi_session_create(g, p, 0, NULL, &s, &err) == MI_OK, "create: %s", err.message);
  if (!s) goto done;
  CHECK(mi_session_fallback_count(s) == 1, "one fallback, got %d", mi_session_fallback_count(s));
  CHECK(mi_session_fallback_node(s, 0) && strcmp(mi_session_fallback_node(s, 0), "sig") == 0,
        "Sigmoid node reported as fallback");
  compare_with_ref("relu_add_sigmoid", g, s, 2, 2);
  /* The template times its kernels with the host clock and says so. */
  CHECK(mi_session_device_time(s, &ns) == 1, "device time reported");
done:
  mi_session_destroy(s);
  mi_graph_destroy(g);
}

static void fallback_refused(mi_plugin_t *p) {
  mi_graph_t *g = graph_relu_add_sigmoid();
  mi_session_t *s = (mi_session_t *)(uintptr_t)1;
  mi_session_options_t o = options();
  mi_error_t err = {0};
  int32_t rc;
  o.allow_host_fallback = 0;
  rc = mi_session_create(g, p, 0, &o, &s, &err);
  CHECK(rc == MI_ERR_UNSUPPORTED, "rc %d", rc);
  CHECK(s == NULL, "out NULL");
  CHECK(strstr(err.message, "node 'sig' (Sigmoid)") != NULL, "message: %s", err.message);
  mi_graph_destroy(g);
}

static void choices(mi_plugin_t *p) {
  mi_graph_t *g = graph_relu_add_sigmoid();
  mi_session_t *s = NULL;
  mi_session_options_t o = options();
  mi_error_t err = {0};
  mi_knob_value_t chunk = {"chunk", 64, 0};
  mi_node_choice_t good[2] = {{"relu", "relu.scalar", 1, &chunk}, {"add", NULL, 1, &chunk}};
  mi_node_choice_t bad = {"relu", "relu.no-such-variant", 0, NULL};
  mi_knob_value_t bad_chunk = {"chunk", 63, 0};
  mi_node_choice_t bad_knob = {"add2", NULL, 1, &bad_chunk};
  int32_t rc;
  o.choice_count = 2;
  o.choices = good;
  CHECK(mi_session_create(g, p, 0, &o, &s, &err) == MI_OK, "good choices: %s", err.message);
  if (s) compare_with_ref("choices", g, s, 2, 2);
  mi_session_destroy(s);
  s = NULL;
  o.choice_count = 1;
  o.choices = &bad;
  rc = mi_session_create(g, p, 0, &o, &s, &err);
  CHECK(rc == MI_ERR_INVALID_CONFIG && s == NULL, "unknown variant refused (rc %d)", rc);
  CHECK(strstr(err.message, "node 'relu' (Relu): ") != NULL, "message: %s", err.message);
  o.choices = &bad_knob;
  rc = mi_session_create(g, p, 0, &o, &s, &err);
  CHECK(rc == MI_ERR_INVALID_CONFIG && s == NULL, "bad knob refused (rc %d)", rc);
  CHECK(strstr(err.message, "node 'add2' (Add): ") != NULL, "message: %s", err.message);
  /* The template has no device knobs: asking for one is refused, not ignored. */
  {
    mi_knob_value_t threads = {"threads", 2, 0};
    mi_session_options_t o2 = options();
    o2.device_knob_count = 1;
    o2.device_knobs = &threads;
    rc = mi_session_create(g, p, 0, &o2, &s, &err);
    CHECK(rc != MI_OK && s == NULL, "device knobs on a plugin without them (rc %d)", rc);
  }
  mi_graph_destroy(g);
}

static void folded_shape_and_constants(mi_plugin_t *p) {
  mi_graph_t *g = graph_shape_const();
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  int found_reshape = 0, found_shape = 0, found_relu = 0;
  CHECK(mi_graph_infer_shapes(g, &err) == MI_OK, "infer: %s", err.message);
  CHECK(mi_session_create(g, p, 0, NULL, &s, &err) == MI_OK, "create: %s", err.message);
  if (!s) goto done;
  for (int32_t i = 0; i < mi_session_fallback_count(s); i++) {
    const char *n = mi_session_fallback_node(s, i);
    found_reshape |= strcmp(n, "reshape") == 0;
    found_shape |= strcmp(n, "shape") == 0;
    found_relu |= strcmp(n, "relu") == 0;
  }
  CHECK(found_reshape, "Reshape falls back to the host");
  CHECK(!found_shape, "Shape is folded at create time, not a fallback");
  CHECK(!found_relu, "Relu runs on the device");
  compare_with_ref("shape_const", g, s, 1, 1);
  /* A run with inputs of another shape than prepared is refused. */
  {
    int64_t d[4] = {1, 3, 4, 4};
    mi_array_t *x = mi_array_create(MI_DTYPE_FLOAT32, 4, d), *out = (mi_array_t *)(uintptr_t)1;
    int32_t rc = mi_session_run(s, (const mi_array_t *const *)&x, 1, &out, 1, &err);
    CHECK(rc == MI_ERR_INVALID_ARGUMENT && out == NULL, "wrong input shape refused (rc %d)", rc);
    CHECK(strstr(err.message, "input 'x'") != NULL, "message: %s", err.message);
    mi_array_destroy(x);
  }
done:
  mi_session_destroy(s);
  mi_graph_destroy(g);
}

/* A dynamic input dim leaves shapes unknown: create fails cleanly. */
static void dynamic_shapes(mi_plugin_t *p) {
  mi_graph_t *g = mi_graph_create("dyn");
  int64_t d[2] = {MI_DIM_DYNAMIC, 4};
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 2, d), r = act(g, "r");
  mi_session_t *s = (mi_session_t *)(uintptr_t)1;
  mi_error_t err = {0};
  mi_graph_add_input(g, x);
  mi_graph_add_node(g, "Relu", "relu", 1, &x, 1, &r);
  mi_graph_add_output(g, r);
  CHECK(mi_session_create(g, p, 0, NULL, &s, &err) != MI_OK && s == NULL,
        "dynamic shapes refused");
  CHECK(err.message[0] != '\0', "with a message");
  mi_graph_destroy(g);
}

static mi_registry_t *r;
static mi_plugin_t *p;

static void setup(void) {
  const char *build = getenv("MI_BUILD");
  char dir[1024];
  mi_error_t err = {0};
  REQUIRE(build, "MI_BUILD is not set");
  r = mi_registry_create();
  snprintf(dir, sizeof dir, "%s/tests/plugins/template", build);
  CHECK(mi_registry_scan(r, dir, &err) == MI_OK, "scan %s: %s", dir, err.message);
  p = mi_registry_find(r, "template");
  REQUIRE(p != NULL, "template plugin loaded from %s (%d rejected)", dir, mi_registry_rejected_count(r));
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static void fallback_and_boundaries_case(void) {
  fallback_and_boundaries(p);
}

static void fallback_refused_case(void) {
  fallback_refused(p);
}

static void choices_case(void) {
  choices(p);
}

static void folded_shape_and_constants_case(void) {
  folded_shape_and_constants(p);
}

static void dynamic_shapes_case(void) {
  dynamic_shapes(p);
}

static const tu_case_t tu_cases[] = {
    {"fallback_and_boundaries", fallback_and_boundaries_case},
    {"fallback_refused", fallback_refused_case},
    {"choices", choices_case},
    {"folded_shape_and_constants", folded_shape_and_constants_case},
    {"dynamic_shapes", dynamic_shapes_case},
};

TU_MAIN(setup, teardown)
