/* cmd_accuracy.c - `mi-host accuracy`: a model-side configuration's accuracy cost against FP32,
 * measured on the reference interpreter over calibration and held-out inputs. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mi_host.h"

#define ACC_MAX_CALIB MI_HOST_MAX_INPUT_ARGS
#define ACC_MAX_SPECS MI_HOST_MAX_INPUT_ARGS
#define MI_MAX_INPUTS_ACC MI_HOST_MAX_INPUT_ARGS

typedef struct acc_args {
  const char *model, *config, *device;
  const char *calib[ACC_MAX_CALIB];  /* DIR, or INPUT=DIR per input of a multi-input model */
  const char *shapes[ACC_MAX_SPECS]; /* NAME=D0,D1,...: the shape of a random input */
  const char *inputs[ACC_MAX_SPECS]; /* NAME=FILE.npy: a fixed value in every sample */
  const char *values[ACC_MAX_SPECS]; /* NAME=V0,V1: an input made a constant (an If it decides inlined) */
  int calib_count, shape_count, input_count, value_count, sensitivity, tensors, json, samples;
} acc_args_t;

#define OPTIONS(X)                                                                       \
  X(O_MODEL, "model", "M.onnx", "the FP32 model")                                        \
  X(O_CONFIG, "config", "C.yaml", "the model-side configuration (docs/transforms.md)")   \
  X(O_CALIB, "calib", "DIR|INPUT=DIR",                                                   \
    "*.npy inputs: the first half calibrates, the rest is held\n"                        \
    "out; a multi-input model takes one subfolder per input\n"                           \
    "(named after it) or one --calib INPUT=DIR per input")                               \
  X(O_SAMPLES, "samples", "N",                                                           \
    "without --calib: N deterministic random inputs each for\n"                          \
    "calibration and held-out (default 4, at most 1000)")                                \
  MI_CLI_OPTS_MODEL_INPUT(X)                                                             \
  MI_CLI_OPT_VALUE(X)                                                                    \
  X(O_DEVICE, "device", "PLUGIN:INDEX", "fuse for that device's kernel variants")        \
  X(O_SENS, "sensitivity", NULL, "also the error of each layer's setting applied alone") \
  X(O_TENSORS, "tensors", NULL,                                                          \
    "also each tensor's error against the FP32 model with the\n"                         \
    "same passes, and each INT8 activation's own rounding")                              \
  MI_CLI_OPT_JSON(X)
MI_CLI_TABLE(OPTIONS, k_opts);

static int parse_args(mi_host_t *h, int argc, char **argv, acc_args_t *a) {
  mi_cli_t c;
  int k, st;
  long long v = 0;
  memset(a, 0, sizeof *a);
  a->samples = 4;
  mi_host_cli_begin(h, &c, "accuracy", k_opts,
                    "Applies the model-side configuration and compares the result with the FP32 model\n"
                    "on the reference interpreter (relative L2 error, cosine, top-1 agreement).",
                    argc, argv);
  while ((k = mi_host_cli_next(&c, &st))) {
    switch (k) {
    case O_MODEL: a->model = c.value; break;
    case O_CONFIG: a->config = c.value; break;
    case O_DEVICE: a->device = c.value; break;
    case O_SENS: a->sensitivity = 1; break;
    case O_TENSORS: a->tensors = 1; break;
    case O_JSON: a->json = 1; break;
    case O_SAMPLES:
      if (mi_cli_int(&c, 1, 1000, &v)) return MI_HOST_USAGE;
      a->samples = (int)v;
      break;
    case O_VALUE:
      if (a->value_count == ACC_MAX_SPECS)
        return mi_host_usage_error("accuracy: at most %d --value options", ACC_MAX_SPECS);
      a->values[a->value_count++] = c.value;
      break;
    case O_CALIB:
      if (a->calib_count == ACC_MAX_CALIB)
        return mi_host_usage_error("accuracy: at most %d --calib options", ACC_MAX_CALIB);
      a->calib[a->calib_count++] = c.value;
      break;
    default: { /* --shape, --input */
      int is_shape = k == O_SHAPE;
      int *n = is_shape ? &a->shape_count : &a->input_count;
      /* NAME:VALUE too, as every other command takes it (mi_graph_input_args) */
      if (!strchr(c.value, '=') && !strchr(c.value, ':'))
        return mi_host_usage_error("accuracy: %s needs NAME=%s", c.opt,
                                   is_shape ? "D0,D1,... or NAME:D0xD1x..." : "FILE.npy");
      if (*n == ACC_MAX_SPECS)
        return mi_host_usage_error("accuracy: at most %d %s options", ACC_MAX_SPECS, c.opt);
      (is_shape ? a->shapes : a->inputs)[(*n)++] = c.value;
    }
    }
  }
  if (st != MI_HOST_OK) return st;
  if (!a->model || !a->config) return mi_host_usage_error("accuracy: --model and --config are required");
  if (a->calib_count && (a->shape_count || a->input_count))
    return mi_host_usage_error(
        "accuracy: --shape and --input are for random samples, not with "
        "--calib (give every input a --calib INPUT=DIR)");
  return 0;
}

/* Applies --input files (loaded into fixed[], one slot per graph input) and --shape sizes to
 * the graph inputs, then checks that every input left random is float32 of static shape. */
static int32_t fix_inputs(mi_graph_t *g, const acc_args_t *a, mi_array_t **fixed,
                          mi_error_t *err) {
  /* The same --input/--shape rules as mi-host profile (mi_graph_input_args). */
  int32_t rc = mi_graph_input_args(g, a->inputs, a->input_count, a->shapes, a->shape_count, fixed, err);
  for (int32_t i = 0; i < g->input_count && rc == MI_OK; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    if (fixed[i]) continue;
    if (t->dtype != MI_DTYPE_FLOAT32)
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "input '%s' is %s: random samples are float32 "
                     "only: give --input %s=FILE.npy",
                     t->name, mi_dtype_name(t->dtype), t->name);
    else if (t->rank < 0)
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "input '%s' has no declared shape: give "
                     "--shape %s=D0,D1,...",
                     t->name, t->name);
    int32_t d = rc == MI_OK ? mi_tensor_dynamic_dim(t) : -1;
    if (d >= 0)
      rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT,
                     "input '%s' has dynamic dim %d%s%s%s: give "
                     "--shape %s=D0,D1,...",
                     t->name, (int)d, t->dim_names[d] ? " ('" : "",
                     t->dim_names[d] ? t->dim_names[d] : "", t->dim_names[d] ? "')" : "",
                     t->name);
  }
  return rc;
}

static void json_metrics(FILE *f, int *first, const char *key, const mi_xf_metrics_t *m) {
  int inner = 1;
  mi_json_key(f, first, key);
  fputc('{', f);
  mi_json_key(f, &inner, "samples");
  fprintf(f, "%d", (int)m->samples);
  mi_json_key(f, &inner, "rel_l2");
  mi_json_double(f, m->rel_l2);
  mi_json_key(f, &inner, "cosine");
  mi_json_double(f, m->cosine);
  mi_json_key(f, &inner, "max_abs");
  mi_json_double(f, m->max_abs);
  mi_json_key(f, &inner, "top1");
  if (m->top1 < 0) fputs("null", f);
  else
    mi_json_double(f, m->top1);
  fputc('}', f);
}

static void text_metrics(const char *what, const mi_xf_metrics_t *m) {
  printf("%-10s %3d samples  rel L2 %.6f  cosine %.6f  max |d| %.4g", what, (int)m->samples,
         m->rel_l2, m->cosine, m->max_abs);
  if (m->top1 >= 0) printf("  top-1 agreement %.1f%%", 100.0 * m->top1);
  putchar('\n');
}

static void report(const acc_args_t *a, int json, const char *canon, uint64_t hash,
                   const mi_xf_stats_t *st, const mi_xf_samples_t *calib, int shared,
                   const mi_xf_metrics_t *mc, const mi_xf_metrics_t *mh,
                   const mi_xf_sensitivity_t *sens, int32_t ns, const mi_xf_tensor_error_t *te,
                   int32_t nte) {
  if (json) {
    int first = 1;
    fputc('{', stdout);
    mi_json_key(stdout, &first, "model");
    mi_json_string(stdout, a->model);
    mi_json_key(stdout, &first, "config");
    mi_json_string(stdout, a->config);
    mi_json_key(stdout, &first, "config_hash");
    fprintf(stdout, "\"%016" PRIx64 "\"", hash);
    mi_json_key(stdout, &first, "config_canonical");
    mi_json_string(stdout, canon);
    mi_json_key(stdout, &first, "inputs");
    mi_json_string(stdout, calib->synthetic ? "deterministic random" : a->calib[0]);
    mi_json_key(stdout, &first, "held_out_shares_calibration");
    fputs(shared ? "true" : "false", stdout);
    mi_json_key(stdout, &first, "stats");
    fprintf(stdout,
            "{\"bn_folded\":%d,\"groups\":%d,\"layout_converts\":%d,\"padded_layers\":%d,"
            "\"pruned_layers\":%d,\"pruned_channels\":%lld,\"prune_skipped\":%d,"
            "\"quantized_layers\":%d,\"quantized_activations\":%d,\"equalized_pairs\":%d}",
            (int)st->bn_folded, (int)st->groups, (int)st->layout_converts, (int)st->padded_layers,
            (int)st->pruned_layers, (long long)st->pruned_channels, (int)st->prune_skipped,
            (int)st->quantized_layers, (int)st->quantized_acts, (int)st->equalized_pairs);
    json_metrics(stdout, &first, "calibration", mc);
    json_metrics(stdout, &first, "held_out", mh);
    if (sens) {
      mi_json_key(stdout, &first, "sensitivity");
      fputc('[', stdout);
      for (int32_t i = 0; i < ns; i++) {
        int f2 = 1;
        fputs(i ? ",{" : "{", stdout);
        mi_json_key(stdout, &f2, "node");
        mi_json_string(stdout, sens[i].node);
        mi_json_key(stdout, &f2, "weights");
        mi_json_string(stdout, mi_xf_precision_name(sens[i].layer.weights));
        mi_json_key(stdout, &f2, "activations");
        mi_json_string(stdout, mi_xf_precision_name(sens[i].layer.activations));
        mi_json_key(stdout, &f2, "prune");
        mi_json_double(stdout, sens[i].layer.prune);
        json_metrics(stdout, &f2, "metrics", &sens[i].metrics);
        fputc('}', stdout);
      }
      fputc(']', stdout);
    }
    if (te) {
      mi_json_key(stdout, &first, "tensors");
      fputc('[', stdout);
      for (int32_t i = 0; i < nte; i++) {
        int f2 = 1;
        fputs(i ? ",{" : "{", stdout);
        mi_json_key(stdout, &f2, "tensor");
        mi_json_string(stdout, te[i].tensor);
        mi_json_key(stdout, &f2, "op");
        mi_json_string(stdout, te[i].op);
        mi_json_key(stdout, &f2, "quantized");
        fputs(te[i].quantized ? "true" : "false", stdout);
        mi_json_key(stdout, &f2, "rel_l2");
        mi_json_double(stdout, te[i].rel_l2);
        mi_json_key(stdout, &f2, "own_rel_l2");
        mi_json_double(stdout, te[i].own_rel_l2);
        mi_json_key(stdout, &f2, "per_channel_rel_l2");
        mi_json_double(stdout, te[i].per_channel_rel_l2);
        fputc('}', stdout);
      }
      fputc(']', stdout);
    }
    fputs("}\n", stdout);
    return;
  }
  printf("model      %s\nconfig     %s (hash %016" PRIx64 ")\n", a->model, a->config, hash);
  if (calib->synthetic)
    printf("inputs     deterministic random data (no --calib given): figures are not dataset accuracy\n");
  else
    printf("inputs     %s%s%s\n", a->calib[0], a->calib_count > 1 ? " ..." : "",
           shared ? " (one file: held-out set = calibration set)" : "");
  printf(
      "passes     %d BN folded, %d Conv pairs equalized, %d fused groups, %d layout conversions, "
      "%d layers padded\n",
      (int)st->bn_folded, (int)st->equalized_pairs, (int)st->groups, (int)st->layout_converts,
      (int)st->padded_layers);
  printf(
      "           %d layers pruned (%lld channels, %d skipped), %d layers quantized, %d "
      "activations quantized\n",
      (int)st->pruned_layers, (long long)st->pruned_channels, (int)st->prune_skipped,
      (int)st->quantized_layers, (int)st->quantized_acts);
  text_metrics("calib", mc);
  text_metrics("held-out", mh);
  if (sens) {
    printf("per-layer sensitivity (this layer alone transformed, held-out set):\n");
    for (int32_t i = 0; i < ns; i++)
      printf("  %-32s w=%s a=%s prune=%.2f  rel L2 %.6f  cosine %.6f\n", sens[i].node,
             mi_xf_precision_name(sens[i].layer.weights),
             mi_xf_precision_name(sens[i].layer.activations), sens[i].layer.prune,
             sens[i].metrics.rel_l2, sens[i].metrics.cosine);
  }
  if (te) {
    printf(
        "per tensor (held-out set; accumulated rel L2 against the FP32 model with the same passes;\n"
        "  an INT8 activation's own rounding, and with a per-channel scale):\n");
    for (int32_t i = 0; i < nte; i++) {
      printf("  %-16s %.6f", te[i].op, te[i].rel_l2);
      if (te[i].quantized) printf("  own %.6f  per-channel %.6f", te[i].own_rel_l2, te[i].per_channel_rel_l2);
      printf("  %s\n", te[i].tensor);
    }
  }
}

int mi_host_cmd_accuracy(mi_host_t *h, int argc, char **argv) {
  acc_args_t a;
  mi_error_t err;
  mi_graph_t *g = NULL, *x = NULL;
  mi_xf_config_t *c = NULL;
  mi_xf_samples_t *calib = NULL, *held = NULL;
  mi_xf_sensitivity_t *sens = NULL;
  mi_xf_tensor_error_t *te = NULL;
  int32_t nte = 0;
  mi_variant_desc_t *variants = NULL;
  mi_array_t **fixed = NULL;
  uint32_t nv = 0;
  int32_t ns = 0;
  char *canon = NULL;
  int rc = MI_HOST_FAIL, shared = 0, usage = parse_args(h, argc, argv, &a);
  mi_xf_stats_t st;
  mi_xf_metrics_t mc, mh;
  if (usage) return usage < 0 ? MI_HOST_OK : usage;
  mi_error_clear(&err);
  if (mi_onnx_load(a.model, &g, &err) != MI_OK) {
    fprintf(stderr, "mi-host: %s\n", err.message);
    rc = MI_HOST_USAGE;
    goto done;
  }
  /* --value first: a fixed input is no longer one of the graph's inputs */
  if (mi_cli_check_values(a.values, a.value_count, a.inputs, a.input_count, a.shapes, a.shape_count, &err) ||
      mi_graph_input_values(g, a.values, a.value_count, &err) != MI_OK) {
    fprintf(stderr, "mi-host: %s\n", err.message);
    rc = MI_HOST_USAGE;
    goto done;
  }
  if (!(fixed = calloc((size_t)g->input_count + 1, sizeof *fixed))) {
    mi_errorf(&err, MI_ERR_OUT_OF_MEMORY, "accuracy: out of memory");
    goto fail;
  }
  if (g->input_count > MI_MAX_INPUTS_ACC) {
    mi_errorf(&err, MI_ERR_UNSUPPORTED, "accuracy: %s has %d inputs, at most %d are supported",
              a.model, (int)g->input_count, MI_MAX_INPUTS_ACC);
    goto fail;
  }
  if ((!a.calib_count && fix_inputs(g, &a, fixed, &err) != MI_OK) ||
      /* the graph tune's workers build the configuration on: an If the values decide is its
       * branch, constants folded */
      mi_graph_make_static(g, NULL, &err) != MI_OK || mi_xf_config_load(a.config, &c, &err) != MI_OK ||
      mi_xf_config_check(c, g, &err) != MI_OK) {
    fprintf(stderr, "mi-host: %s\n", err.message);
    rc = MI_HOST_USAGE;
    goto done;
  }
  if (a.device) {
    mi_registry_t *r;
    h->described_only = 1; /* only variants are read: no plugin code needs to run here */
    r = mi_host_registry(h);
    mi_plugin_t *p = NULL;
    uint32_t dev = 0;
    if (!r || mi_registry_device(r, a.device, &p, &dev, &err) != MI_OK ||
        mi_plugin_variants(p, dev, &variants, &nv, &err) != MI_OK) {
      fprintf(stderr, "mi-host: %s\n", r ? err.message : "no plugins");
      rc = MI_HOST_USAGE;
      goto done;
    }
  }
  if (a.calib_count) {
    if (mi_xf_samples_load_dirs(g, a.calib, a.calib_count, &calib, &err) != MI_OK) {
      fprintf(stderr, "mi-host: %s\n", err.message);
      rc = MI_HOST_USAGE;
      goto done;
    }
    if (calib->sample_count == 1) {
      shared = 1;
    } else if (mi_xf_samples_split(calib, (calib->sample_count + 1) / 2, &held, &err) != MI_OK) {
      goto fail;
    }
  } else if (mi_xf_samples_random_fixed(g, a.samples, 1, (const mi_array_t *const *)fixed,
                                        &calib, &err) != MI_OK ||
             mi_xf_samples_random_fixed(g, a.samples, 2, (const mi_array_t *const *)fixed,
                                        &held, &err) != MI_OK) {
    goto fail;
  }
  mi_xf_apply_opts_t opts = {.calib = calib, .variants = variants, .variant_count = nv};
  if (mi_xf_apply(g, c, &opts, &x, &st, &err) != MI_OK ||
      mi_xf_compare(g, x, calib, &mc, &err) != MI_OK ||
      mi_xf_compare(g, x, held ? held : calib, &mh, &err) != MI_OK ||
      mi_xf_config_canonical(c, &canon, &err) != MI_OK)
    goto fail;
  if (a.sensitivity &&
      mi_xf_sensitivity(g, c, NULL, calib, held ? held : calib, &sens, &ns, &err) != MI_OK)
    goto fail;
  if (a.tensors && mi_xf_tensor_errors(g, c, calib, held ? held : calib, &te, &nte, &err) != MI_OK)
    goto fail;
  report(&a, a.json || h->json, canon, mi_xf_config_hash(c), &st, calib, shared, &mc, &mh,
         a.sensitivity ? sens : NULL, ns, a.tensors ? te : NULL, nte);
  rc = MI_HOST_OK;
  goto done;
fail:
  fprintf(stderr, "mi-host: %s\n", err.message);
done:
  for (int32_t i = 0; fixed && i < g->input_count; i++) mi_array_destroy(fixed[i]);
  free(fixed);
  free(canon);
  free(sens);
  free(te);
  free(variants);
  mi_xf_samples_destroy(calib);
  mi_xf_samples_destroy(held);
  mi_xf_config_destroy(c);
  mi_graph_destroy(x);
  mi_graph_destroy(g);
  return rc;
}
