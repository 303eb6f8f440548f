/* test_space.c - the joint space on the real npu-stub and blis-cpu plugins: dimensions from the
 * declarations, constraints and repair, canonical text and hash, deterministic operators. */
#include <math.h>

#include "metainfer/mi_ltask.h"
#include "metainfer/mi_transform.h"
#include "space/space.h"
#include "test_space_util.h"

static void test_npu(mi_registry_t *r, const mi_graph_t *g) {
  mi_plugin_t *p = mi_registry_find(r, "npu-stub");
  mi_space_t *s = NULL;
  mi_error_t err;
  int32_t *pt, *q, n, changed = 0, df, ov, d;
  char *text = NULL, size[32];
  mi_rng_t a, b;
  CHECK(p != NULL, "npu-stub not loaded");
  if (!p) return;
  CHECK(mi_space_create(g, p, 0, NULL, &s, &err) == MI_OK, "%s", err.message);
  if (!s) return;
  n = mi_space_dim_count(s);
  pt = calloc((size_t)n, sizeof *pt);
  q = calloc((size_t)n, sizeof *q);
  /* Device knobs once, op knobs per node, model-side choices for weighted layers. */
  CHECK(tsu_dim(s, "device.cores") >= 0 && tsu_dim(s, "device.dvfs_level") >= 0, "device knobs");
  CHECK(tsu_dim(s, "node.conv1.knob.cores") < 0, "device knob repeated per node");
  df = tsu_dim(s, "node.conv1.knob.dataflow");
  ov = tsu_dim(s, "node.conv1.knob.dma_overlap");
  CHECK(df >= 0 && ov >= 0, "conv1 op knobs");
  CHECK(tsu_dim(s, "node.relu1.knob.dataflow") < 0, "relu variant does not read dataflow");
  d = tsu_dim(s, "node.conv1.precision");
  CHECK(d >= 0 && tsu_value(s, d, "int8_channel") >= 0 && tsu_value(s, d, "fp16") >= 0,
        "npu offers int8 and fp16 for conv1");
  CHECK(tsu_dim(s, "node.conv1.prune") >= 0 && tsu_dim(s, "model.fold_bn") >= 0, "model dims");
  CHECK(mi_space_log10_size(s) > 5, "log10 size %g", mi_space_log10_size(s));
  CHECK(mi_space_exact_size(s) > 0 && log10((double)mi_space_exact_size(s)) <= mi_space_log10_size(s) + 1e-9,
        "exact size %lld", (long long)mi_space_exact_size(s));
  mi_space_size_text(s, size, sizeof size);
  CHECK(size[0] != '\0', "size text");

  mi_space_default(s, pt);
  CHECK(mi_space_check(s, pt, &err) == MI_OK, "default breaks a rule: %s", err.message);
  /* The default point is what mi-run does without a configuration: every node's variant is
   * auto and no node knob is active (its canonical text names no variant and no node knob). */
  CHECK(!mi_space_active(s, pt, df) && !mi_space_active(s, pt, ov), "node knobs active at auto");
  CHECK(mi_space_canonical(s, pt, &text, &err) == MI_OK && !strstr(text, ".knob.") &&
            strstr(text, "node.conv1.variant=" MI_SPACE_VARIANT_AUTO "\n"),
        "default canonical: %s", text ? text : "");
  free(text);
  text = NULL;

  /* output_stationary implies dma_overlap = 1 (a declared IMPLIES constraint). */
  pt[tsu_dim(s, "node.conv1.variant")] = tsu_value(s, tsu_dim(s, "node.conv1.variant"), "npu.conv");
  pt[df] = tsu_value(s, df, "output_stationary");
  pt[ov] = tsu_value(s, ov, "0");
  CHECK(mi_space_check(s, pt, &err) == MI_ERR_INVALID_CONFIG && strstr(err.message, "conv1"),
        "broken IMPLIES not seen: %s", err.message);
  CHECK(mi_space_repair(s, pt, &changed, &err) == MI_OK, "repair: %s", err.message);
  CHECK(changed > 0, "repair moved nothing");
  CHECK(!strcmp(mi_space_dim_label(s, df, pt[df]), "weight_stationary") ||
            !strcmp(mi_space_dim_label(s, ov, pt[ov]), "1"),
        "repair did not fix dataflow/dma_overlap");

  /* Canonical text round-trips and equal points hash equal. */
  CHECK(mi_space_canonical(s, pt, &text, &err) == MI_OK, "%s", err.message);
  CHECK(text && strstr(text, "device.cores=") && strstr(text, "node.conv1.variant=npu.conv"),
        "canonical: %s", text ? text : "");
  CHECK(mi_space_parse(s, text, q, &err) == MI_OK, "parse: %s", err.message);
  CHECK(!memcmp(pt, q, (size_t)n * sizeof *pt), "parse(canonical) differs");
  CHECK(mi_space_hash(s, pt) == mi_space_hash(s, q) && mi_space_hash(s, pt) != 0, "hash");
  CHECK(mi_space_parse(s, "node.nope.variant=x\n", q, &err) == MI_ERR_PARSE &&
            strstr(err.message, "line 1"),
        "unknown key accepted: %s", err.message);
  free(text);

  /* Samples all satisfy the rules and are a pure function of the seed. */
  mi_rng_seed(&a, 42);
  mi_rng_seed(&b, 42);
  {
    int distinct = 0;
    uint64_t first = 0;
    for (int i = 0; i < 100; i++) {
      CHECK(mi_space_sample(s, &a, pt, &err) == MI_OK, "sample: %s", err.message);
      CHECK(mi_space_check(s, pt, &err) == MI_OK, "sample breaks: %s", err.message);
      CHECK(mi_space_sample(s, &b, q, &err) == MI_OK, "sample: %s", err.message);
      CHECK(mi_space_hash(s, pt) == mi_space_hash(s, q), "same seed, different sample");
      if (i == 0) first = mi_space_hash(s, pt);
      else
        distinct += mi_space_hash(s, pt) != first;
    }
    CHECK(distinct > 90, "samples hardly vary: %d", distinct);
  }
  /* Mutation changes something; crossover takes each node's dims from one parent. */
  {
    uint64_t h = mi_space_hash(s, pt);
    int32_t *c = calloc((size_t)n, sizeof *c);
    CHECK(mi_space_mutate(s, &a, 0.0, pt, &err) == MI_OK, "%s", err.message);
    CHECK(mi_space_hash(s, pt) != h, "mutate with p=0 changed nothing");
    mi_space_sample(s, &a, q, &err);
    CHECK(mi_space_crossover(s, &a, pt, q, c, &err) == MI_OK, "%s", err.message);
    for (d = 0; d < n; d++)
      CHECK(c[d] == pt[d] || c[d] == q[d] || mi_space_dim_kind(s, d) == MI_DIM_KNOB,
            "crossover invented %s", mi_space_dim_name(s, d));
    free(c);
  }
  /* The model half becomes a transform configuration. */
  {
    mi_xf_config_t *xc = NULL;
    char *canon = NULL;
    int32_t pd = tsu_dim(s, "node.conv2.precision"), pr = tsu_dim(s, "node.conv1.prune");
    mi_space_default(s, pt);
    pt[pd] = tsu_value(s, pd, "int8_channel");
    pt[pr] = tsu_value(s, pr, "0.50");
    CHECK(pt[pd] >= 0 && pt[pr] >= 0, "values");
    CHECK(mi_space_xf_config(s, pt, &xc, &err) == MI_OK, "%s", err.message);
    CHECK(xc && mi_xf_config_canonical(xc, &canon, &err) == MI_OK, "%s", err.message);
    CHECK(canon && strstr(canon, "conv2") && strstr(canon, "conv1"), "xf canonical: %s",
          canon ? canon : "");
    if (xc) {
      mi_xf_layer_t l;
      int32_t node = -1;
      for (int32_t i = 0; i < g->node_count; i++)
        if (!strcmp(g->nodes[i].name, "conv2")) node = i;
      mi_xf_config_resolve(xc, g, node, &l);
      CHECK(l.weights == MI_XF_INT8 && l.scales == MI_XF_PER_CHANNEL, "conv2 not int8/channel");
    }
    free(canon);
    mi_xf_config_destroy(xc);
  }
  /* The hardware half becomes session options. At the default point they name no variant and
   * no node knob for any node: the plugin chooses, as in mi-run without a configuration. */
  {
    mi_space_hw_t *hw = NULL;
    const mi_session_options_t *o;
    int32_t vd = tsu_dim(s, "node.conv1.variant"), named = 0;
    mi_space_default(s, pt);
    CHECK(mi_space_hw_create(s, pt, &hw, &err) == MI_OK, "%s", err.message);
    o = mi_space_hw_options(hw);
    CHECK(o && o->device_knob_count >= 3 && o->choice_count > 0, "hw options");
    for (int32_t i = 0; o && i < o->choice_count; i++)
      named += o->choices[i].variant_id != NULL || o->choices[i].knob_count != 0;
    CHECK(named == 0, "the default point names a variant or knobs for %d nodes", (int)named);
    mi_space_hw_destroy(hw);
    hw = NULL;
    /* An explicit variant is named, with its knobs. */
    pt[vd] = tsu_value(s, vd, "npu.conv");
    CHECK(mi_space_hw_create(s, pt, &hw, &err) == MI_OK, "%s", err.message);
    o = mi_space_hw_options(hw);
    named = 0;
    for (int32_t i = 0; o && i < o->choice_count; i++)
      if (o->choices[i].variant_id && !strcmp(o->choices[i].variant_id, "npu.conv") &&
          o->choices[i].knob_count > 0 && !strcmp(o->choices[i].node, "conv1"))
        named++;
    CHECK(named == 1, "conv1's explicit variant and knobs not in the session options");
    mi_space_hw_destroy(hw);
  }
  free(pt);
  free(q);
  mi_space_destroy(s);
}

static void test_blis(mi_registry_t *r, const mi_graph_t *g) {
  mi_plugin_t *p = mi_registry_find(r, "blis-cpu");
  mi_space_t *s = NULL;
  mi_error_t err;
  int32_t *pt, n, vd, im, gemm = -1, other = -1;
  char *text = NULL;
  CHECK(p != NULL, "blis-cpu not loaded");
  if (!p) return;
  CHECK(mi_space_create(g, p, 0, NULL, &s, &err) == MI_OK, "%s", err.message);
  if (!s) return;
  n = mi_space_dim_count(s);
  pt = calloc((size_t)n, sizeof *pt);
  /* blis-cpu's conv variants compute in FP32 and INT8, and conv.packed_gemm_fp16 stores FP16
   * weights where the CPU has F16C: the precision dimension offers INT8 choices, and FP16 exactly
   * where that variant is listed. */
  {
    int32_t pd = tsu_dim(s, "node.conv1.precision"), int8 = 0, fp16 = 0, f16c = 0, bf16 = 0, pgb = 0;
    mi_device_desc_t dd;
    mi_variant_desc_t *vars = NULL;
    uint32_t nv = 0;
    memset(&dd, 0, sizeof dd);
    if (mi_plugin_device_info(p, 0, &dd, &err) == MI_OK) f16c = strstr(dd.isa, "-f16c") != NULL;
    if (mi_plugin_variants(p, 0, &vars, &nv, &err) == MI_OK)
      for (uint32_t v = 0; v < nv; v++) pgb |= !strcmp(vars[v].id, "conv.packed_gemm_bf16");
    free(vars);
    CHECK(pd >= 0, "blis-cpu offers no precision dimension");
    for (int32_t v = 0; pd >= 0 && v < mi_space_dim_size(s, pd); v++) {
      const char *l = mi_space_dim_label(s, pd, v);
      if (strstr(l, "int8")) int8 = 1;
      if (strstr(l, "fp16")) fp16 = 1;
      if (strstr(l, "bf16")) bf16 = 1;
    }
    CHECK(pd < 0 || (int8 && fp16 == f16c), "precision choices: int8 %d, fp16 %d (F16C %d)", int8, fp16, f16c);
    /* bf16 exactly where the BF16 variant is listed (AVX512_BF16 CPUs) */
    CHECK(bf16 == pgb, "precision bf16 offered %d, conv.packed_gemm_bf16 listed %d", bf16, pgb);
  }
  vd = tsu_dim(s, "node.conv1.variant");
  im = tsu_dim(s, "node.conv1.knob.im2col_block");
  CHECK(vd >= 0 && im >= 0, "conv1 variant / im2col_block");
  if (vd >= 0 && im >= 0) {
    for (int32_t v = 0; v < mi_space_dim_size(s, vd); v++) {
      if (!strcmp(mi_space_dim_label(s, vd, v), "conv.im2col_gemm")) gemm = v;
      else
        other = v;
      /* BF16 compute is the bf16 precision's (the executor runs a BF16 layer on it), never a
       * kernel choice: as one, the tuner could take it for an FP32 layer */
      CHECK(strcmp(mi_space_dim_label(s, vd, v), "conv.packed_gemm_bf16") != 0,
            "conv.packed_gemm_bf16 offered as a kernel variant of conv1");
      /* FP16 weight storage rounds an FP32 layer's weights: never a layer task's kernel choice
       * (its drop is the fp16 precision's), every FP32 variant is */
      {
        const char *l = mi_space_dim_label(s, vd, v);
        int fp16 = !strcmp(l, "conv.packed_gemm_fp16"), node = mi_space_dim_node(s, vd);
        char choice[96];
        mi_space_default(s, pt);
        snprintf(choice, sizeof choice, "variant=%s", l);
        CHECK(mi__space_variant_keeps_fp32(s, vd, v) == !fp16, "%s: keeps FP32 %d", l,
              mi__space_variant_keeps_fp32(s, vd, v));
        CHECK(mi_ltask_apply(s, pt, node, choice) == !fp16 && (fp16 || pt[vd] == v), "%s as a task's choice: %s", l,
              fp16 ? "applied" : "refused");
      }
    }
    mi_space_default(s, pt);
    pt[vd] = gemm;
    CHECK(mi_space_active(s, pt, im), "im2col_block inactive for conv.im2col_gemm");
    pt[vd] = other;
    CHECK(other < 0 || !mi_space_active(s, pt, im), "variant knob active for another variant");
    pt[im] = 2;
    mi_space_repair(s, pt, NULL, &err);
    CHECK(mi_space_canonical(s, pt, &text, &err) == MI_OK && !strstr(text, "node.conv1.knob.im2col_block"),
          "inactive knob in canonical text: %s", text ? text : "");
    free(text);
  }
  free(pt);
  mi_space_destroy(s);
}

/* An LSTM with constant W and R on blis-cpu: a precision dimension of fp32 and fp16 only (its
 * weight-only rounding, which the LSTM holds as halves), where the CPU has F16C; none without. */
static void test_blis_lstm(mi_registry_t *r) {
  mi_plugin_t *p = mi_registry_find(r, "blis-cpu");
  mi_graph_t *lg = mi_graph_create("lstm");
  int64_t xd[3] = {1, 1, 4}, wd[3] = {1, 32, 4}, rd[3] = {1, 32, 8};
  float w[128], rr[256];
  int32_t in[3], out[3], n, pd;
  mi_space_t *s = NULL;
  mi_device_desc_t dd;
  mi_error_t err;
  int f16c = 0;
  for (int i = 0; i < 256; i++) rr[i] = 0.01f * (float)(i % 17);
  for (int i = 0; i < 128; i++) w[i] = 0.02f * (float)(i % 13);
  in[0] = mi_graph_add_tensor(lg, "x", MI_DTYPE_FLOAT32, 3, xd);
  mi_graph_add_input(lg, in[0]);
  in[1] = mi_graph_add_const_f32(lg, "w", 3, wd, w);
  in[2] = mi_graph_add_const_f32(lg, "r", 3, rd, rr);
  for (int i = 0; i < 3; i++) out[i] = mi_graph_add_tensor(lg, i == 0 ? "y" : i == 1 ? "yh"
                                                                                     : "yc",
                                                           MI_DTYPE_UNDEFINED, -1, NULL);
  n = mi_graph_add_node(lg, "LSTM", "rnn", 3, in, 3, out);
  mi_node_set_int(lg, n, "hidden_size", 8);
  mi_graph_add_output(lg, out[1]);
  REQUIRE(p && mi_graph_infer_shapes(lg, &err) == MI_OK && mi_space_create(lg, p, 0, NULL, &s, &err) == MI_OK);
  memset(&dd, 0, sizeof dd);
  if (mi_plugin_device_info(p, 0, &dd, &err) == MI_OK) f16c = strstr(dd.isa, "-f16c") != NULL;
  pd = tsu_dim(s, "node.rnn.precision");
  CHECK((pd >= 0) == (f16c != 0), "LSTM precision dimension %d (F16C %d)", (int)pd, f16c);
  CHECK(pd < 0 || (mi_space_dim_size(s, pd) == 2 && !strcmp(mi_space_dim_label(s, pd, 0), "fp32") &&
                   !strcmp(mi_space_dim_label(s, pd, 1), "fp16")),
        "LSTM precision choices: %d", pd >= 0 ? (int)mi_space_dim_size(s, pd) : -1);
  mi_space_destroy(s);
  mi_graph_destroy(lg);
}

static mi_registry_t *r;
static mi_graph_t *g;

static void setup(void) {
  r = tsu_registry();
  g = tsu_small_cnn();
}

static void teardown(void) {
  mi_graph_destroy(g);
  mi_registry_destroy(r);
}

static void test_npu_all(void) {
  test_npu(r, g);
}

static void test_blis_all(void) {
  test_blis(r, g);
  test_blis_lstm(r);
}

static const tu_case_t tu_cases[] = {
    TU_CASE(test_npu_all),
    TU_CASE(test_blis_all),
};

TU_MAIN(setup, teardown)
