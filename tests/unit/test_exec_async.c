/* test_exec_async.c - a session on a plugin with ABI 1.3's asynchronous pair enqueues its device
 * kernels and waits where the host needs their data: the test plugin (tests/plugins/ap_plugin.c)
 * runs enqueued kernels only at device_sync and counts calls made with work in flight, so a
 * missing wait shows as wrong values or a count. Also: per-node timing keeps kernel_run, a
 * failing enqueued kernel is an error of the run, a 1.2 table runs synchronously, half the pair
 * is refused at load. On opencl and vulkan where they load: a zoo model enqueued gives the
 * outputs and the summed device time its synchronous run gives. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "metainfer/mi.h"
#include "metainfer/mi_graph.h"

#include "test_exec_util.h"

enum { C_ENQUEUED,
       C_RAN,
       C_SYNCS,
       C_VIOLATIONS };
#define KERNELS 5 /* the device kernels of graph(): r1, add1, r2, add2, r3 */

/* x -> Relu r1 -> a; Add(a, x) add1 -> b; Relu r2 -> c; Neg neg (host) -> d; Add(d, b) add2 -> e;
 * Relu r3 -> f. Outputs f and b. `add1` names the first Add (the failing case's "bad"). */
static mi_graph_t *graph(const char *add1, int32_t *neg) {
  static const int64_t xd[4] = {1, 4, 8, 8};
  mi_graph_t *g = mi_graph_create("async");
  int32_t x = mi_graph_add_tensor(g, "x", MI_DTYPE_FLOAT32, 4, xd), t[6], in[2];
  const char *names[6] = {"a", "b", "c", "d", "e", "f"};
  for (int i = 0; i < 6; i++) t[i] = mi_graph_add_tensor(g, names[i], MI_DTYPE_FLOAT32, -1, NULL);
  mi_graph_add_input(g, x);
  mi_graph_add_node(g, "Relu", "r1", 1, &x, 1, &t[0]);
  in[0] = t[0];
  in[1] = x;
  mi_graph_add_node(g, "Add", add1, 2, in, 1, &t[1]);
  mi_graph_add_node(g, "Relu", "r2", 1, &t[1], 1, &t[2]);
  *neg = mi_graph_add_node(g, "Neg", "neg", 1, &t[2], 1, &t[3]); /* not on the plugin: host */
  in[0] = t[3];
  in[1] = t[1];
  mi_graph_add_node(g, "Add", "add2", 2, in, 1, &t[4]);
  mi_graph_add_node(g, "Relu", "r3", 1, &t[4], 1, &t[5]);
  mi_graph_add_output(g, t[5]);
  mi_graph_add_output(g, t[1]);
  return g;
}

/* The plugin of test folder tests/plugins/async/<c>, its registry in *r. */
static mi_plugin_t *load(const char *c, const char *name, mi_registry_t **r) {
  char buf[PATH_MAX], rel[128];
  mi_error_t err = {0};
  snprintf(rel, sizeof rel, "tests/plugins/async/%s", c);
  *r = mi_registry_create();
  REQUIRE(*r);
  if (mi_registry_scan(*r, tu_build_path(buf, sizeof buf, rel), &err) != MI_OK)
    fprintf(stderr, "scan %s: %s\n", buf, err.message);
  return mi_registry_find(*r, name);
}

static double counter(const mi_plugin_t *p, uint32_t i) {
  mi_counter_sample_t s;
  mi_error_t err = {0};
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  if (p->api.counter_read(p->ctx, 0, i, &s, &err) != MI_OK || !s.has_value) return -1;
  return s.value;
}

/* Runs graph() three times on p (new inputs each run) and compares both outputs with the
 * reference interpreter's, bit for bit (Relu, Add and Neg round the same everywhere). With
 * `own_times` each device kernel has a time of its own (it ran through kernel_run). */
static void run_checked(mi_plugin_t *p, int per_node_timing, int own_times, const char *label) {
  int32_t neg = -1, rc;
  mi_graph_t *g = graph("add1", &neg);
  mi_session_options_t o;
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  uint64_t ns = 0;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.allow_host_fallback = 1;
  o.per_node_timing = per_node_timing;
  rc = mi_graph_infer_shapes(g, &err);
  if (rc == MI_OK) rc = mi_session_create(g, p, 0, &o, &s, &err);
  CHECK(rc == MI_OK, "%s: create: %s", label, err.message);
  if (rc == MI_OK)
    CHECK(mi_session_fallback_count(s) == 1, "%s: %d node(s) on the host, want 1 (neg)", label,
          mi_session_fallback_count(s));
  for (int run = 0; run < 3 && rc == MI_OK; run++) {
    mi_array_t *in = mi_array_create(MI_DTYPE_FLOAT32, 4, g->tensors[g->inputs[0]].dims);
    mi_array_t *want[2] = {0}, *got[2] = {0};
    mi_array_fill_random(in, 70u + (unsigned)run);
    rc = mi_ref_run(g, (const mi_array_t *const *)&in, 1, want, 2, &err);
    CHECK(rc == MI_OK, "%s: ref: %s", label, err.message);
    if (rc == MI_OK) rc = mi_session_run(s, (const mi_array_t *const *)&in, 1, got, 2, &err);
    CHECK(rc == MI_OK, "%s: run %d: %s", label, run, err.message);
    for (int i = 0; i < 2 && rc == MI_OK; i++)
      CHECK(got[i] && want[i] && got[i]->nbytes == want[i]->nbytes &&
                memcmp(got[i]->data, want[i]->data, want[i]->nbytes) == 0,
            "%s: run %d: output %d differs from the reference", label, run, i);
    if (rc == MI_OK) {
      /* 1000 ns per kernel, from the syncs or from each kernel_run */
      CHECK(mi_session_device_time(s, &ns) == 1 && ns == 1000 * KERNELS,
            "%s: device time %llu ns, want %d", label, (unsigned long long)ns, 1000 * KERNELS);
      CHECK(mi_session_node_time(s, neg, NULL, NULL) == 1, "%s: the host node has no wall time",
            label);
      CHECK(mi_session_node_time(s, 0, NULL, NULL) == (own_times ? 2 : 0),
            "%s: node r1's own time: %d", label, mi_session_node_time(s, 0, NULL, NULL));
    }
    mi_array_destroy(in);
    for (int i = 0; i < 2; i++) {
      mi_array_destroy(want[i]);
      mi_array_destroy(got[i]);
    }
  }
  mi_session_destroy(s);
  mi_graph_destroy(g);
}

/* Enqueued, waited for before the host step reads c and before the outputs: the right values,
 * no call with work in flight, one wait before the host step and one at the end of each run. */
static void enqueued_chain(void) {
  mi_registry_t *r;
  mi_plugin_t *p = load("pair", "async-test", &r);
  REQUIRE(p);
  run_checked(p, 0, 0, "enqueued");
  CHECK(counter(p, C_ENQUEUED) == 3 * KERNELS, "%g kernels enqueued, want %d",
        counter(p, C_ENQUEUED), 3 * KERNELS);
  CHECK(counter(p, C_RAN) == 0, "%g kernels ran synchronously", counter(p, C_RAN));
  CHECK(counter(p, C_SYNCS) == 3 * 2, "%g syncs, want 2 per run", counter(p, C_SYNCS));
  CHECK(counter(p, C_VIOLATIONS) == 0, "%g calls with kernels in flight",
        counter(p, C_VIOLATIONS));
  mi_registry_destroy(r);
}

/* Per-node times asked for (profiles): every kernel through kernel_run, each timed. */
static void per_node_timing(void) {
  mi_registry_t *r;
  mi_plugin_t *p = load("pair", "async-test", &r);
  REQUIRE(p);
  run_checked(p, 1, 1, "per-node timing");
  CHECK(counter(p, C_ENQUEUED) == 0, "%g kernels enqueued", counter(p, C_ENQUEUED));
  CHECK(counter(p, C_RAN) == 3 * KERNELS, "%g kernels ran, want %d", counter(p, C_RAN),
        3 * KERNELS);
  mi_registry_destroy(r);
}

/* A kernel that fails where it runs, at the sync: the run fails naming it, leaves nothing in
 * flight, and the session runs into the same error again rather than into a crash. */
static void failure_at_sync(void) {
  mi_registry_t *r;
  mi_plugin_t *p = load("fail", "async-fail", &r);
  int32_t neg = -1, rc;
  mi_graph_t *g = graph("bad", &neg);
  mi_session_t *s = NULL;
  mi_error_t err = {0};
  mi_array_t *in = NULL, *got[2] = {0};
  REQUIRE(p);
  rc = mi_graph_infer_shapes(g, &err);
  if (rc == MI_OK) rc = mi_session_create(g, p, 0, NULL, &s, &err);
  REQUIRE(rc == MI_OK);
  in = mi_array_create(MI_DTYPE_FLOAT32, 4, g->tensors[g->inputs[0]].dims);
  mi_array_fill_random(in, 3);
  for (int run = 0; run < 2; run++) {
    mi_error_clear(&err);
    rc = mi_session_run(s, (const mi_array_t *const *)&in, 1, got, 2, &err);
    CHECK(rc == MI_ERR_DEVICE, "run %d: status %d (%s), want MI_ERR_DEVICE", run, (int)rc,
          err.message);
    CHECK(strstr(err.message, "'bad'") && strstr(err.message, "simulated device fault"),
          "run %d: the error does not name the kernel: %s", run, err.message);
    CHECK(!got[0] && !got[1], "run %d: outputs handed out by a failed run", run);
    CHECK(counter(p, C_ENQUEUED) == 3.0 * (run + 1), "run %d: %g kernels enqueued, want 3 a run",
          run, counter(p, C_ENQUEUED));
  }
  mi_session_destroy(s);
  CHECK(counter(p, C_VIOLATIONS) == 0, "%g calls with kernels in flight",
        counter(p, C_VIOLATIONS));
  mi_array_destroy(in);
  mi_graph_destroy(g);
  mi_registry_destroy(r);
}

/* A table of ABI 1.2's size loads and runs synchronously, though its bytes past the declared
 * size hold the pair: the host reads only what the plugin declared. */
static void abi12_table(void) {
  mi_registry_t *r;
  mi_plugin_t *p = load("abi12", "async-abi12", &r);
  REQUIRE(p);
  CHECK(p->abi_minor == 2, "abi minor %u", p->abi_minor);
  CHECK(!p->api.kernel_enqueue && !p->api.device_sync, "the pair read past the declared size");
  run_checked(p, 0, 1, "abi 1.2");
  CHECK(counter(p, C_ENQUEUED) == 0, "%g kernels enqueued", counter(p, C_ENQUEUED));
  CHECK(counter(p, C_RAN) == 3 * KERNELS, "%g kernels ran, want %d", counter(p, C_RAN),
        3 * KERNELS);
  mi_registry_destroy(r);
}

/* kernel_enqueue without device_sync: refused at load, the message naming the pair. */
static void half_pair(void) {
  mi_registry_t *r;
  mi_plugin_t *p = load("half", "async-half", &r);
  const char *why;
  CHECK(!p, "a plugin with kernel_enqueue and no device_sync was loaded");
  CHECK(mi_registry_rejected_count(r) == 1, "%d rejected", mi_registry_rejected_count(r));
  why = mi_registry_rejected_count(r) == 1 ? mi_registry_rejected(r, 0, NULL) : NULL;
  CHECK(why && strstr(why, "device_sync") && strstr(why, "pair"), "refusal: %s",
        why ? why : "(none)");
  mi_registry_destroy(r);
}

/* The same model enqueued (one wait per run) and run kernel by kernel: the same outputs (the
 * same kernels on the same buffers), within tolerance of the reference, and a device time from
 * the syncs near the kernels' sum (the same work, timed per launch either way). */
static void enqueued_on(mi_plugin_t *p) {
  mi_graph_t *g = zoo("mobilenetv2", 0.5, 2, 32);
  mi_session_options_t o;
  mi_session_t *sa, *ss;
  mi_array_t *x = input_for(g, 11), *want[4] = {0}, *ga[4] = {0}, *gs[4] = {0}, *none[4] = {0};
  uint64_t na = 0, nsync = 0;
  double e;
  if (!p->api.kernel_enqueue) {
    printf("%s: no asynchronous pair, skipped\n", p->name);
    mi_array_destroy(x);
    mi_graph_destroy(g);
    return;
  }
  memset(&o, 0, sizeof o);
  sa = session_opts(g, p, o);
  o.per_node_timing = 1;
  ss = session_opts(g, p, o);
  ref(g, x, want);
  for (int i = 0; i < 3; i++) { /* the first runs pay for compiles: compare the last */
    destroy_outs(ga, none);
    destroy_outs(gs, none);
    run(sa, g, x, ga);
    run(ss, g, x, gs);
  }
  e = tu_rel_l2_arrays(ga[0], gs[0]);
  CHECK(e == 0, "%s: enqueued and synchronous outputs differ (rel L2 %g)", p->name, e);
  e = tu_rel_l2_arrays(ga[0], want[0]);
  CHECK(e < 1e-4, "%s: enqueued output off the reference (rel L2 %g)", p->name, e);
  CHECK(mi_session_device_time(sa, &na) == mi_session_device_time(ss, &nsync),
        "%s: one clock has a device time, the other not", p->name);
  printf("%s: device time enqueued %.3f ms, kernel by kernel %.3f ms\n", p->name, na * 1e-6,
         nsync * 1e-6);
  mi_session_destroy(sa);
  mi_session_destroy(ss);
  destroy_outs(ga, want);
  destroy_outs(gs, none);
  mi_array_destroy(x);
  mi_graph_destroy(g);
}

static void real_devices(void) {
  mi_registry_t *r = open_plugins();
  other_plugins(r, enqueued_on);
  mi_registry_destroy(r);
}

static const tu_case_t tu_cases[] = {TU_CASE(enqueued_chain), TU_CASE(per_node_timing),
                                     TU_CASE(failure_at_sync), TU_CASE(abi12_table),
                                     TU_CASE(half_pair), TU_CASE(real_devices)};
TU_MAIN(NULL, NULL)
