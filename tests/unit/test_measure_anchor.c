/* test_measure_anchor.c - a configuration job paired with an anchor (mi_worker_config_t.paired):
 * each timed sample is followed by as many runs of the anchor configuration in the same worker,
 * and the profile gives the samples' ratio to them (paired_ratio, paired_s, paired_count). The
 * anchor's session must not count in the measured configuration's memory, an anchor that cannot
 * run leaves the measurement as it was, and a job without one has none. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi.h"
#include "metainfer/mi_transform.h"
#include "test_measure_util.h"

static char dir[64], model[128], g_dirs[512];
static mi_measure_options_t mo;
static mi_worker_pool_t *pool;
static mi_error_t err;

static void setup(void) {
  const char *build = getenv("MI_BUILD");
  mi_graph_t *g = tm_conv_relu();
  mi_worker_options_t o;
  REQUIRE(build && g && tu_tempdir(dir, sizeof dir, "anchor"), "MI_BUILD unset or setup failed");
  snprintf(g_dirs, sizeof g_dirs, "%s/plugins", build);
  snprintf(model, sizeof model, "%s/conv.onnx", dir);
  REQUIRE(mi_onnx_save(g, model, &err) == MI_OK, "%s", err.message);
  mi_graph_destroy(g);
  mi_measure_options_default(&mo);
  mo.warmup = 1;
  mo.min_repeats = mo.max_repeats = 7;
  mo.max_remeasure = 0;
  mi_worker_options_default(&o);
  o.plugin_dirs = g_dirs;
  o.timeout_s = 60;
  REQUIRE(mi_worker_pool_create(&o, &pool, &err) == MI_OK, "%s", err.message);
}

static void teardown(void) {
  mi_worker_pool_destroy(pool);
  if (dir[0]) tu_rmtree(dir);
}

/* One job of the model at session options `so`, paired with `anchor` (NULL: no anchor). */
static mi_profile_t *job(const mi_session_options_t *so, const mi_session_options_t *anchor) {
  mi_worker_config_t wc;
  mi_worker_config_result_t res;
  mi_profile_t *pr = NULL;
  memset(&wc, 0, sizeof wc);
  wc.struct_size = sizeof wc;
  wc.model = model;
  wc.so = so;
  wc.paired = anchor != NULL;
  wc.paired_so = anchor;
  if (mi_worker_profile_config(pool, "blis-cpu:0", &wc, &mo, 0, &pr, &res, &err) != MI_OK) {
    CHECK(0, "job: %s", err.message);
    return NULL;
  }
  return pr;
}

static void paired_samples(void) {
  mi_session_options_t so;
  mi_profile_t *plain, *paired;
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  plain = job(&so, NULL);
  paired = job(&so, &so);
  if (!plain || !paired) goto done;
  CHECK(plain->paired_count == 0 && plain->paired_ratio == 0, "no anchor asked: %d paired",
        (int)plain->paired_count);
  CHECK(paired->paired_count == paired->latency.sample_count && paired->paired_count >= 7,
        "every kept sample paired: %d of %d", (int)paired->paired_count,
        (int)paired->latency.sample_count);
  /* The anchor is the same configuration: a ratio of order 1 (not a timing claim: 10x either way
   * would mean the pairing timed something else, e.g. one run against a batch). */
  CHECK(paired->paired_ratio > 0.1 && paired->paired_ratio < 10 && paired->paired_s > 0,
        "ratio %g to %g s", paired->paired_ratio, paired->paired_s);
  /* blis-cpu counts the bytes its sessions hold: the anchor's session (as large as the measured
   * one) must not be in the measured configuration's peak. */
  CHECK(plain->peak_memory_source == 1 && paired->peak_memory_source == 1 &&
            paired->peak_memory_bytes == plain->peak_memory_bytes,
        "peak memory %llu with the anchor, %llu without (sources %d, %d)",
        (unsigned long long)paired->peak_memory_bytes, (unsigned long long)plain->peak_memory_bytes,
        (int)paired->peak_memory_source, (int)plain->peak_memory_source);
  CHECK(paired->layer_count == plain->layer_count && paired->layer_count > 0,
        "layers %d against %d", (int)paired->layer_count, (int)plain->layer_count);
done:
  mi_profile_destroy(plain);
  mi_profile_destroy(paired);
}

static void anchor_that_fails(void) {
  /* A node choice of a variant the device does not have: the anchor's session cannot be made,
   * and the measurement of the configuration itself stands, unpaired. */
  mi_session_options_t so, bad;
  mi_node_choice_t ch;
  mi_profile_t *pr;
  memset(&so, 0, sizeof so);
  so.struct_size = sizeof so;
  memset(&ch, 0, sizeof ch);
  ch.node = "conv";
  ch.variant_id = "no-such-variant";
  bad = so;
  bad.choices = &ch;
  bad.choice_count = 1;
  pr = job(&so, &bad);
  CHECK(pr && pr->latency.sample_count >= 7 && pr->paired_count == 0 && pr->paired_ratio == 0,
        "unpaired measurement: %d samples, %d paired", pr ? (int)pr->latency.sample_count : -1,
        pr ? (int)pr->paired_count : -1);
  mi_profile_destroy(pr);
}

static const tu_case_t tu_cases[] = {TU_CASE(paired_samples), TU_CASE(anchor_that_fails)};
TU_MAIN(setup, teardown)
