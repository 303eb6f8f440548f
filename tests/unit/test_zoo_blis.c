/* test_zoo_blis.c - every mi-zoo family runs on blis-cpu:0 through the host loader and a session,
 * with no host fallback, and matches the reference interpreter within 1e-4 relative L2; so does
 * its fused form (BN folded, chains grouped for blis-cpu), each group one kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi.h"
#include "metainfer/mi_transform.h"
#include "zoo.h"

#include "test_util.h"

typedef struct config {
  const char *family;
  double width;
  int32_t depth, resolution, batch;
} config_t;

/* Small sizes keep the reference run quick; batch 2 exercises the per-image loops. */
static const config_t configs[] = {
    {"mobilenetv2", 0.5, 3, 40, 2},
    {"mobilenetv3", 0.5, 4, 48, 1},
    {"resnet", 0.5, 4, 40, 2},
    {"transformer", 0.5, 2, 7, 2},
    {"mlp", 0.5, 3, 12, 3},
    {"kws", 0.5, 2, 31, 2},
};

/* Runs one model on the session with the given device knobs; compares with `want`. Returns the
 * output (caller destroys) or NULL. */
static mi_array_t *run_one(const config_t *c, mi_graph_t *g, mi_plugin_t *p, const mi_array_t *in,
                           const mi_array_t *want, int32_t threads, double tol) {
  mi_session_options_t o;
  mi_knob_value_t th = {"threads", threads, 0};
  mi_session_t *s = NULL;
  mi_array_t *got = NULL;
  mi_error_t err = {0};
  int32_t i, rc;
  memset(&o, 0, sizeof o);
  o.struct_size = (uint32_t)sizeof o;
  o.allow_host_fallback = 1;
  o.device_knob_count = 1;
  o.device_knobs = &th;
  rc = mi_session_create(g, p, 0, &o, &s, &err);
  CHECK(rc == MI_OK, "%s: session: %s", c->family, err.message);
  if (rc != MI_OK) return NULL;
  for (i = 0; i < mi_session_fallback_count(s); i++)
    fprintf(stderr, "  %s: host fallback for node '%s'\n", c->family, mi_session_fallback_node(s, i));
  CHECK(mi_session_fallback_count(s) == 0, "%s: %d node(s) fell back to the host", c->family,
        mi_session_fallback_count(s));
  for (i = 0; i < mi_session_unfused_count(s); i++)
    fprintf(stderr, "  %s: not fused: %s\n", c->family, mi_session_unfused(s, i));
  CHECK(mi_session_unfused_count(s) == 0, "%s: %d group(s) refused and run node by node", c->family,
        mi_session_unfused_count(s));
  rc = mi_session_run(s, &in, 1, &got, 1, &err);
  CHECK(rc == MI_OK, "%s: run: %s", c->family, err.message);
  if (rc == MI_OK) {
    double e;
    CHECK(got->nbytes == want->nbytes, "%s: output size %zu vs %zu", c->family, got->nbytes,
          want->nbytes);
    e = got->nbytes == want->nbytes ? tu_rel_l2_arrays(got, want) : 1.;
    fprintf(stderr, "  %-12s threads=%d rel_l2=%.3g\n", c->family, threads, e);
    CHECK(e < tol, "%s: rel L2 %.3g >= %.0e (threads %d)", c->family, e, tol, threads);
  }
  mi_session_destroy(s);
  return got;
}

/* The INT8 form (per-channel INT8 weights, INT8 activations, BN folded): every quantized layer is
 * lowered to one blis-cpu INT8 kernel (none refused), and the output stays within 5e-2 relative
 * L2 of the reference running the same QDQ graph (the reference rounds float sums before
 * quantizing, the kernel sums exactly, so a code can differ by one near a half). */
static void run_int8(const config_t *c, mi_graph_t *g, mi_plugin_t *p, const mi_array_t *in) {
  mi_xf_config_t *xc = mi_xf_config_create();
  mi_xf_apply_opts_t ao;
  mi_xf_samples_t *cal = NULL;
  mi_graph_t *gq = NULL;
  mi_array_t *want = NULL, *got;
  mi_error_t err = {0};
  int32_t rc = xc ? mi_xf_samples_random(g, 2, 5, &cal, &err) : MI_ERR_OUT_OF_MEMORY;
  memset(&ao, 0, sizeof ao);
  if (rc == MI_OK) {
    xc->fold_bn = 1;
    xc->defaults.weights = MI_XF_INT8;
    xc->defaults.scales = MI_XF_PER_CHANNEL;
    xc->defaults.activations = MI_XF_INT8;
    ao.calib = cal;
    rc = mi_xf_apply(g, xc, &ao, &gq, NULL, &err);
  }
  if (rc == MI_OK) rc = mi_ref_run(gq, (const mi_array_t *const *)&in, 1, &want, 1, &err);
  CHECK(rc == MI_OK, "%s int8: %s", c->family, err.message);
  if (rc == MI_OK) {
    config_t ci = *c;
    ci.family = "  (int8)";
    got = run_one(&ci, gq, p, in, want, 1, 5e-2);
    mi_array_destroy(got);
  }
  mi_array_destroy(want);
  mi_graph_destroy(gq);
  mi_xf_samples_destroy(cal);
  mi_xf_config_destroy(xc);
}

static void run_family(const config_t *c, mi_plugin_t *p, int32_t max_threads) {
  mi_zoo_options_t opt;
  mi_graph_t *g = NULL;
  mi_array_t *in = NULL, *want = NULL, *got1 = NULL, *gotn = NULL;
  mi_error_t err = {0};
  int32_t rc;
  mi_zoo_options_default(&opt);
  opt.width = c->width;
  opt.depth = c->depth;
  opt.resolution = c->resolution;
  opt.batch = c->batch;
  opt.seed = 7;
  rc = mi_zoo_build(c->family, &opt, &g, &err);
  if (rc == MI_OK) rc = mi_graph_infer_shapes(g, &err);
  CHECK(rc == MI_OK, "%s: build: %s", c->family, err.message);
  if (rc != MI_OK) goto done;
  {
    const mi_tensor_t *t = &g->tensors[g->inputs[0]];
    in = mi_array_create(t->dtype, t->rank, t->dims);
  }
  CHECK(in != NULL, "%s: input array", c->family);
  if (!in) goto done;
  mi_array_fill_random(in, 11);
  rc = mi_ref_run(g, (const mi_array_t *const *)&in, 1, &want, 1, &err);
  CHECK(rc == MI_OK, "%s: reference: %s", c->family, err.message);
  if (rc != MI_OK) goto done;
  got1 = run_one(c, g, p, in, want, 1, 1e-4);
  if (max_threads > 1) {
    /* BLIS never splits the k loop and the plugin splits its loops per item: same bits. */
    gotn = run_one(c, g, p, in, want, max_threads, 1e-4);
    CHECK(got1 && gotn && got1->nbytes == gotn->nbytes &&
              memcmp(got1->data, gotn->data, got1->nbytes) == 0,
          "%s: threads=1 and threads=%d outputs differ", c->family, max_threads);
  }
  { /* the fused form, against the original graph's reference output */
    mi_xf_config_t *xc = mi_xf_config_create();
    mi_xf_apply_opts_t ao;
    mi_variant_desc_t *vars = NULL;
    uint32_t nv = 0;
    mi_graph_t *gf = NULL;
    mi_array_t *gotf;
    memset(&ao, 0, sizeof ao);
    rc = xc ? mi_plugin_variants(p, 0, &vars, &nv, &err) : MI_ERR_OUT_OF_MEMORY;
    if (rc == MI_OK) {
      xc->fold_bn = 1;
      xc->fuse = 1;
      ao.variants = vars;
      ao.variant_count = nv;
      rc = mi_xf_apply(g, xc, &ao, &gf, NULL, &err);
    }
    CHECK(rc == MI_OK, "%s: fold_bn + fuse: %s", c->family, err.message);
    if (rc == MI_OK) {
      gotf = run_one(c, gf, p, in, want, max_threads, 1e-4);
      mi_array_destroy(gotf);
    }
    mi_graph_destroy(gf);
    free(vars);
    mi_xf_config_destroy(xc);
  }
  if (strcmp(c->family, "transformer") != 0) run_int8(c, g, p, in);
done:
  mi_array_destroy(got1);
  mi_array_destroy(gotn);
  mi_array_destroy(in);
  mi_array_destroy(want);
  mi_graph_destroy(g);
}

static mi_registry_t *r;
static mi_plugin_t *p;
static uint32_t dev;

static void setup(void) {
  const char *build = getenv("MI_BUILD");
  char dir[1024];
  mi_error_t err = {0};
  REQUIRE(build, "MI_BUILD is not set");
  r = mi_registry_create();
  snprintf(dir, sizeof dir, "%s/plugins", build);
  CHECK(mi_registry_scan(r, dir, &err) == MI_OK, "scan %s: %s", dir, err.message);
  REQUIRE(mi_registry_device(r, "blis-cpu:0", &p, &dev, &err) == MI_OK, "blis-cpu:0: %s", err.message);
}

static void teardown(void) {
  mi_registry_destroy(r);
}

static void families(void) {
  mi_device_desc_t dd;
  mi_error_t err = {0};
  REQUIRE(mi_plugin_device_info(p, dev, &dd, &err) == MI_OK, "%s", err.message);
  int32_t th = dd.max_threads > 2 ? 2 : (int32_t)dd.max_threads;
  for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) run_family(&configs[i], p, th);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(families),
};

TU_MAIN(setup, teardown)
