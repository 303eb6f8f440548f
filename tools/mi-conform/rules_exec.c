/* rules_exec.c - conformance rules that run things: reference match, counters, buffers,
 * error paths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"
#include "conform_util.h"

/* Knob samples per variant beyond the defaults, and cases per op: enough to catch tiles that
 * assume divisibility, few enough for CI. */
#define KNOB_SAMPLES 2
#define MAX_CASES 4

/* A random value from a knob's domain. */
static void sample_knob(const mi_knob_desc_t *k, mi_rng_t *rng, mi_knob_value_t *v) {
  uint64_t r = mi_rng_next(rng);
  v->name = k->name;
  v->i = k->default_int;
  v->f = k->default_float;
  if (k->type == MI_KNOB_INT && k->value_count > 0) {
    uint32_t cnt = k->value_count < MI_KNOB_MAX_VALUES ? k->value_count : MI_KNOB_MAX_VALUES;
    v->i = k->values[r % cnt];
  } else if (k->type == MI_KNOB_INT) {
    /* In uint64: a valid full-range knob (INT64_MIN..INT64_MAX) spans 2^64 - 1, which
     * overflows int64 arithmetic; unsigned wrap-around lands back inside [min, max]. */
    uint64_t step = k->step > 0 ? (uint64_t)k->step : 1;
    uint64_t last = k->max > k->min ? ((uint64_t)k->max - (uint64_t)k->min) / step : 0;
    uint64_t idx = last == UINT64_MAX ? r : r % (last + 1);
    v->i = (int64_t)((uint64_t)k->min + idx * step);
  } else if (k->type == MI_KNOB_BOOL) {
    v->i = (int64_t)(r & 1);
  } else if (k->type == MI_KNOB_ENUM) {
    uint64_t n = (uint64_t)conform_enum_count(k);
    v->i = n ? (int64_t)(r % n) : 0;
  } else {
    v->f = k->fmin + (k->fmax - k->fmin) * (double)(r >> 11) / 9007199254740992.0;
  }
}

/* The tolerance on relative L2 error for a variant: FP32 variants 1e-4; a variant that does not
 * compute in FP32 is held to its lower precision: FP16 and BF16 (whose 8-bit significand leaves
 * about 2e-3 on one conv of random operands, blis-cpu's conv.packed_gemm_bf16) 2e-2. */
static double tolerance(const mi_variant_desc_t *v) {
  if (v->dtype_mask == 0 || (v->dtype_mask & MI_DTYPE_BIT(MI_DTYPE_FLOAT32))) return 1e-4;
  if (v->dtype_mask & (MI_DTYPE_BIT(MI_DTYPE_FLOAT16) | MI_DTYPE_BIT(MI_DTYPE_BFLOAT16))) return 2e-2;
  return 1e-1;
}

/* R7: every variant, on each case shape, with defaults and sampled knobs, matches the
 * reference interpreter. A variant that accepts none of its cases fails. */
int conform_rule_reference(conform_ctx_t *c, char *why, size_t n) {
  int ran = 0, variants_checked = 0, no_case = 0;
  mi_rng_t rng = {12345};
  for (uint32_t dev = 0; dev < c->plugin.device_count; dev++) {
    conform_descs_t d;
    if (conform_descs_get(c, dev, &d, why, n) != MI_OK) return CONFORM_FAIL;
    for (uint32_t vi = 0; vi < d.variant_count; vi++) {
      const mi_variant_desc_t *v = &d.variants[vi];
      int accepted = 0, cases = 0;
      char last_refusal[MI_ERROR_MESSAGE_SIZE] = "";
      for (int ci = 0; ci < MAX_CASES; ci++) {
        mi_graph_t *g = conform_case_graph(v->op_type, ci, 7 + (uint64_t)ci);
        if (!g) break;
        cases++;
        for (int sample = 0; sample <= KNOB_SAMPLES; sample++) {
          mi_knob_value_t kv[32];
          int32_t nk = 0;
          mi_error_t err = {0};
          double rel = 0;
          int32_t rc;
          if (sample > 0) { /* sample the knobs this variant reads */
            char list[sizeof v->knobs], *save = NULL;
            memcpy(list, v->knobs, sizeof list);
            for (char *t = strtok_r(list, ", ", &save); t && nk < 32; t = strtok_r(NULL, ", ", &save))
              for (uint32_t k = 0; k < d.knob_count; k++)
                if (!strcmp(d.knobs[k].name, t)) sample_knob(&d.knobs[k], &rng, &kv[nk++]);
            if (nk == 0) break;
            /* names point into `list`'s twin, d.knobs, which outlives the call */
            if (c->plugin.api.check_config &&
                c->plugin.api.check_config(c->plugin.ctx, dev, v->id, kv, nk, NULL) != MI_OK)
              continue;
          }
          rc = conform_compare(c, dev, g, v->id, kv, nk, 99 + (uint64_t)ci, &rel, &err);
          if (rc == MI_ERR_UNSUPPORTED || rc == MI_ERR_INVALID_CONFIG) {
            snprintf(last_refusal, sizeof last_refusal, "%s", err.message);
            continue;
          }
          if (rc != MI_OK) {
            snprintf(why, n, "device %u variant '%s' case %d: %s", dev, v->id, ci, err.message);
            mi_graph_destroy(g);
            conform_descs_free(&d);
            return CONFORM_FAIL;
          }
          accepted++;
          ran++;
          if (!(rel <= tolerance(v))) {
            snprintf(why, n,
                     "device %u variant '%s' (%s) case %d%s: relative L2 error %.3g vs the "
                     "reference, tolerance %.0e",
                     dev, v->id, v->op_type, ci, sample ? " with sampled knobs" : "", rel,
                     tolerance(v));
            mi_graph_destroy(g);
            conform_descs_free(&d);
            return CONFORM_FAIL;
          }
        }
        mi_graph_destroy(g);
      }
      if (cases == 0) {
        no_case++;
        continue;
      }
      variants_checked++;
      if (!accepted) {
        snprintf(why, n,
                 "device %u variant '%s' (%s) accepted none of its %d case shape(s); last "
                 "refusal: %s",
                 dev, v->id, v->op_type, cases, last_refusal);
        conform_descs_free(&d);
        return CONFORM_FAIL;
      }
    }
    conform_descs_free(&d);
  }
  return conform_checked(why, n, variants_checked, "no variant of an op with conformance cases",
                         "%d variant(s), %d run(s) matched the reference%s", variants_checked, ran,
                         no_case ? "; some ops have no conformance case yet" : "");
}

/* Runs the first variant that accepts its first case, to give counters something to count. */
static int run_something(conform_ctx_t *c, uint32_t dev, const conform_descs_t *d) {
  for (uint32_t vi = 0; vi < d->variant_count; vi++) {
    mi_graph_t *g = conform_case_graph(d->variants[vi].op_type, 0, 3);
    double rel;
    int32_t rc;
    if (!g) continue;
    rc = conform_compare(c, dev, g, d->variants[vi].id, NULL, 0, 5, &rel, NULL);
    mi_graph_destroy(g);
    if (rc == MI_OK) return 1;
  }
  return 0;
}

/* R8: counters read without error, never negative, cumulative kinds never decrease, and a
 * reading without a sample says so (has_value = 0). */
int conform_rule_counters(conform_ctx_t *c, char *why, size_t n) {
  const mi_plugin_api_t *a = &c->plugin.api;
  int checked = 0;
  if (!a->counter_count || !a->counter_desc || !a->counter_read) {
    return conform_verdict(why, n, CONFORM_SKIP, "the plugin declares no counters");
  }
  for (uint32_t dev = 0; dev < c->plugin.device_count; dev++) {
    conform_descs_t d;
    mi_counter_sample_t before[64], after[64];
    uint32_t cnt;
    if (conform_descs_get(c, dev, &d, why, n) != MI_OK) return CONFORM_FAIL;
    cnt = d.counter_count < 64 ? d.counter_count : 64;
    for (int phase = 0; phase < 2; phase++) {
      mi_counter_sample_t *s = phase ? after : before;
      if (phase) run_something(c, dev, &d);
      for (uint32_t i = 0; i < cnt; i++) {
        mi_error_t err = {0};
        memset(&s[i], 0, sizeof s[i]);
        s[i].struct_size = sizeof s[i];
        if (a->counter_read(c->plugin.ctx, dev, i, &s[i], &err) != MI_OK) {
          snprintf(why, n, "device %u counter '%s': counter_read failed: %s", dev,
                   d.counters[i].name, err.message);
          conform_descs_free(&d);
          return CONFORM_FAIL;
        }
        if (s[i].has_value && !(s[i].value >= 0)) {
          snprintf(why, n, "device %u counter '%s' reads %g (negative or NaN)", dev,
                   d.counters[i].name, s[i].value);
          conform_descs_free(&d);
          return CONFORM_FAIL;
        }
      }
    }
    for (uint32_t i = 0; i < cnt; i++) {
      int cumulative = d.counters[i].kind == MI_COUNTER_TIMER || d.counters[i].kind == MI_COUNTER_ENERGY;
      if (cumulative && before[i].has_value && after[i].has_value &&
          after[i].value < before[i].value) {
        snprintf(why, n, "device %u counter '%s' (%s, cumulative) went from %g to %g", dev,
                 d.counters[i].name, d.counters[i].unit, before[i].value, after[i].value);
        conform_descs_free(&d);
        return CONFORM_FAIL;
      }
      checked++;
    }
    conform_descs_free(&d);
  }
  return conform_verdict(why, n, CONFORM_PASS,
                         "%d counter(s) read consistently around a run", checked);
}

/* R9: buffers round-trip exactly, partial writes land at their offset, and out-of-range
 * access is refused with a message; views (ABI 1.2), where given, read and write their parent's
 * bytes (rules_view.c). */
int conform_rule_buffers(conform_ctx_t *c, char *why, size_t n) {
  const mi_plugin_api_t *a = &c->plugin.api;
  static const uint64_t sizes[3] = {1, 4097, 1u << 20};
  mi_rng_t rng = {77};
  for (uint32_t dev = 0; dev < c->plugin.device_count; dev++) {
    for (int si = 0; si < 3; si++) {
      uint64_t size = sizes[si];
      unsigned char *src = malloc(size), *dst = malloc(size);
      mi_buffer_t *buf = NULL;
      mi_error_t err = {0};
      const char *fail = NULL;
      if (!src || !dst) {
        free(src);
        free(dst);
        return conform_verdict(why, n, CONFORM_FAIL, "out of memory");
      }
      for (uint64_t i = 0; i < size; i++) src[i] = (unsigned char)mi_rng_next(&rng);
      if (a->buffer_alloc(c->plugin.ctx, dev, size, &buf, &err) != MI_OK || !buf) {
        fail = "buffer_alloc failed";
      } else if (a->buffer_write(c->plugin.ctx, buf, 0, src, size, &err) != MI_OK) {
        fail = "buffer_write failed";
      } else if (memset(dst, 0, size), a->buffer_read(c->plugin.ctx, buf, 0, dst, size, &err) != MI_OK) {
        fail = "buffer_read failed";
      } else if (memcmp(src, dst, size) != 0) {
        fail = "read back differs from what was written";
      } else if (size > 2 && (a->buffer_write(c->plugin.ctx, buf, size / 2, src, 1, &err) != MI_OK ||
                              a->buffer_read(c->plugin.ctx, buf, size / 2, dst, 1, &err) != MI_OK ||
                              dst[0] != src[0])) {
        fail = "a one-byte write at an offset did not read back";
      } else if (a->buffer_read(c->plugin.ctx, buf, size, dst, 1, &err) == MI_OK) {
        fail = "a read past the end was accepted";
      } else if (a->buffer_write(c->plugin.ctx, buf, size - 1, src, 2, &err) == MI_OK) {
        fail = "a write past the end was accepted";
      } else if (err.message[0] == '\0') {
        fail = "out-of-range access refused without a message";
      }
      if (buf) a->buffer_free(c->plugin.ctx, buf);
      free(src);
      free(dst);
      if (!fail && si == 0) { /* views of a 4 KiB parent, once per device */
        memset(&err, 0, sizeof err);
        if ((fail = conform_buffer_views(c, dev, &err)) || (fail = conform_buffer_wraps(c, dev, &err)))
          size = 4096;
      }
      if (fail) {
        return conform_verdict(why, n, CONFORM_FAIL,
                               "device %u, %llu-byte buffer: %s%s%s", dev, (unsigned long long)size,
                               fail, err.message[0] ? ": " : "", err.message);
      }
    }
  }
  return conform_verdict(why, n, CONFORM_PASS,
                         "buffers of 1 B, 4 KiB+1 and 1 MiB round-trip on %u device(s)%s%s",
                         c->plugin.device_count, a->buffer_view ? ", views read and write their parent" : "",
                         a->buffer_wrap ? ", wrapped host memory is the host's bytes" : "");
}

/* A one-node kernel description over two [2,3] FP32 tensors, built directly on the ABI so the
 * plugin, not the host's executor, answers. */
typedef struct tiny_kernel {
  mi_tensor_desc_t t[2];
  const mi_tensor_desc_t *tp[2];
  int32_t in, out;
  mi_node_desc_t node;
  const mi_node_desc_t *np;
  mi_kernel_desc_t desc;
} tiny_kernel_t;

static void tiny_kernel_init(tiny_kernel_t *k, const char *op, const char *variant) {
  memset(k, 0, sizeof *k);
  for (int i = 0; i < 2; i++) {
    k->t[i].struct_size = sizeof k->t[i];
    k->t[i].dtype = MI_DTYPE_FLOAT32;
    k->t[i].rank = 2;
    k->t[i].dims[0] = 2;
    k->t[i].dims[1] = 3;
    k->tp[i] = &k->t[i];
  }
  k->in = 0;
  k->out = 1;
  k->node.struct_size = sizeof k->node;
  k->node.op_type = op;
  k->node.name = "conform";
  k->node.opset = 13;
  k->node.input_count = 1;
  k->node.inputs = &k->in;
  k->node.output_count = 1;
  k->node.outputs = &k->out;
  k->np = &k->node;
  k->desc.struct_size = sizeof k->desc;
  k->desc.node_count = 1;
  k->desc.nodes = &k->np;
  k->desc.tensor_count = 2;
  k->desc.tensors = k->tp;
  k->desc.input_count = 1;
  k->desc.inputs = &k->in;
  k->desc.output_count = 1;
  k->desc.outputs = &k->out;
  k->desc.variant_id = variant;
}

/* Prepares a tiny kernel that must be refused; NULL when it was, else what went wrong. */
static const char *expect_refused(conform_ctx_t *c, uint32_t dev, const char *op,
                                  const char *variant, mi_error_t *err) {
  tiny_kernel_t k;
  mi_kernel_t *kernel = NULL;
  int32_t rc;
  tiny_kernel_init(&k, op, variant);
  memset(err, 0, sizeof *err);
  rc = c->plugin.api.kernel_prepare(c->plugin.ctx, dev, &k.desc, &kernel, err);
  if (rc == MI_OK) {
    if (kernel) c->plugin.api.kernel_release(c->plugin.ctx, kernel);
    return "was accepted";
  }
  if (kernel) return "was refused but left a kernel in *out";
  if (err->message[0] == '\0') return "was refused without a message";
  return NULL;
}

/* R10: calls that must fail do, with a message, and do not take the process down. */
int conform_rule_error_paths(conform_ctx_t *c, char *why, size_t n) {
  const mi_plugin_api_t *a = &c->plugin.api;
  for (uint32_t dev = 0; dev < c->plugin.device_count; dev++) {
    mi_error_t err;
    const char *bad;
    uint32_t cnt = 0;
    mi_knob_desc_t kd;
    tiny_kernel_t k;
    mi_kernel_t *kernel = NULL;

    if ((bad = expect_refused(c, dev, "ConformNoSuchOp", NULL, &err))) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "device %u: a kernel of unknown op type 'ConformNoSuchOp' %s", dev, bad);
    }
    if ((bad = expect_refused(c, dev, "Relu", "conform.no-such-variant", &err))) {
      return conform_verdict(why, n, CONFORM_FAIL,
                             "device %u: Relu with unknown variant 'conform.no-such-variant' %s", dev, bad);
    }
    /* A prepared kernel run with the wrong number of buffers. */
    tiny_kernel_init(&k, "Relu", NULL);
    memset(&err, 0, sizeof err);
    if (a->kernel_prepare(c->plugin.ctx, dev, &k.desc, &kernel, &err) == MI_OK && kernel) {
      int32_t rc = a->kernel_run(c->plugin.ctx, kernel, NULL, 0, NULL, 0, NULL, &err);
      a->kernel_release(c->plugin.ctx, kernel);
      if (rc == MI_OK) {
        return conform_verdict(why, n, CONFORM_FAIL,
                               "device %u: kernel_run with no buffers for a 1-in 1-out kernel succeeded", dev);
      }
    }
    /* Description index past the end. */
    if (a->knob_count(c->plugin.ctx, dev, &cnt, NULL) == MI_OK) {
      memset(&kd, 0, sizeof kd);
      kd.struct_size = sizeof kd;
      memset(&err, 0, sizeof err);
      if (a->knob_desc(c->plugin.ctx, dev, cnt, &kd, &err) == MI_OK) {
        return conform_verdict(why, n, CONFORM_FAIL,
                               "device %u: knob_desc(%u) succeeded with only %u knob(s)", dev, cnt, cnt);
      }
      if (err.message[0] == '\0') {
        return conform_verdict(why, n, CONFORM_FAIL,
                               "device %u: knob_desc past the end refused without a message", dev);
      }
    }
  }
  return conform_verdict(why, n, CONFORM_PASS,
                         "unknown op, unknown variant, wrong buffer count, index past the end: refused");
}
