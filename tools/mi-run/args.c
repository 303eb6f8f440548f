/* args.c - the mi-run command line: parsing, validation of numbers, and the usage text. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mi_run.h"

void run_usage(FILE *f) {
  fputs("usage: mi-run [--plugins DIR] --model M.onnx --device DEV [options]\n"
        "       mi-run --deployment DIR/deployment.yaml [options]   (see mi-run --deployment --help)\n"
        "\n"
        "Runs an ONNX model once (or --repeat N times) and reports outputs and latency.\n"
        "\n"
        "  --model FILE          the ONNX model\n"
        "  --device DEV          'ref' (reference interpreter) or PLUGIN:INDEX (blis-cpu:0)\n"
        "  --plugins DIR         plugin folder (default: $MI_PLUGIN_PATH, else <exe>/../plugins)\n"
        "  --input NAME=FILE     a model input from a .npy file (repeatable); its shape\n"
        "                        replaces the model's dynamic dims\n"
        "  --shape NAME=D0,D1..  the shape of an input without a file (repeatable); needed when\n"
        "                        the input has dynamic dims. Other inputs get deterministic\n"
        "                        random data of the declared shape\n"
        "  --seed S              seed of the random inputs (default 0)\n"
        "  --config C.yaml       apply a model-side transform configuration first (BN folding,\n"
        "                        pruning, padding, quantization, layout, fusion for the\n"
        "                        device's variants; see docs/transforms.md) and list the passes\n"
        "  --output-dir DIR      write each output as DIR/<output name>.npy\n"
        "  --repeat N            N timed runs after the warm-up: median, p10, p90, CV\n"
        "  --warmup N            warm-up runs before timing (default 2 with --repeat)\n"
        "  --threads N           set the device knob 'threads' when the plugin has it\n"
        "  --json                print the summary as one JSON object\n"
        "  --help                this text\n"
        "\n"
        "Exit status: 0 on success, 2 for bad input (model, .npy, names, shapes, device),\n"
        "1 when the device itself failed.\n",
        f);
}

/* A positive (or, with allow_zero, non-negative) int option value. */
static int32_t parse_int(const char *opt, const char *v, int allow_zero, int *out,
                         mi_error_t *err) {
  char *end = NULL;
  long x;
  errno = 0;
  x = strtol(v, &end, 10);
  if (errno || end == v || *end || x > 1000000000L || x < (allow_zero ? 0 : 1))
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s '%s': expected an integer %s", opt, v,
                     allow_zero ? ">= 0" : ">= 1");
  *out = (int)x;
  return MI_OK;
}

static int32_t push(const char ***list, int *count, const char *v, mi_error_t *err) {
  const char **grown = realloc(*list, (size_t)(*count + 1) * sizeof *grown);
  if (!grown) return mi_errorf(err, MI_ERR_OUT_OF_MEMORY, "out of memory");
  grown[(*count)++] = v;
  *list = grown;
  return MI_OK;
}

int32_t run_parse_args(int argc, char **argv, run_opts_t *o, mi_error_t *err) {
  memset(o, 0, sizeof *o);
  o->warmup = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL, *eq;
    char name[32];
    size_t len;
    int32_t rc = MI_OK;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      o->help = 1;
      return MI_OK;
    }
    if (strcmp(a, "--json") == 0) {
      o->json = 1;
      continue;
    }
    if (strncmp(a, "--", 2) != 0)
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "unexpected argument '%s' (see --help)", a);
    /* --opt=value or --opt value */
    eq = strchr(a, '=');
    len = eq ? (size_t)(eq - a) : strlen(a);
    if (len >= sizeof name)
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "unknown option '%.40s' (see --help)", a);
    memcpy(name, a, len);
    name[len] = '\0';
    if (eq) {
      v = eq + 1;
    } else if (i + 1 < argc) {
      v = argv[++i];
    } else {
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "%s needs a value (see --help)", name);
    }
    if (strcmp(name, "--model") == 0) o->model = v;
    else if (strcmp(name, "--device") == 0) o->device = v;
    else if (strcmp(name, "--plugins") == 0) o->plugins_dir = v;
    else if (strcmp(name, "--output-dir") == 0) o->output_dir = v;
    else if (strcmp(name, "--config") == 0) o->config = v;
    else if (strcmp(name, "--input") == 0) rc = push(&o->inputs, &o->input_count, v, err);
    else if (strcmp(name, "--shape") == 0) rc = push(&o->shapes, &o->shape_count, v, err);
    else if (strcmp(name, "--repeat") == 0) rc = parse_int(name, v, 0, &o->repeat, err);
    else if (strcmp(name, "--warmup") == 0) rc = parse_int(name, v, 1, &o->warmup, err);
    else if (strcmp(name, "--threads") == 0) rc = parse_int(name, v, 0, &o->threads, err);
    else if (strcmp(name, "--seed") == 0) {
      char *end = NULL;
      errno = 0;
      o->seed = strtoull(v, &end, 10);
      if (errno || end == v || *end || v[0] == '-')
        rc = mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--seed '%s': expected an unsigned integer",
                       v);
    } else {
      return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "unknown option '%s' (see --help)", name);
    }
    if (rc) return rc;
  }
  if (!o->model) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--model is required (see --help)");
  if (!o->device)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--device is required ('ref' or PLUGIN:INDEX)");
  return MI_OK;
}

void run_free_args(run_opts_t *o) {
  free(o->inputs);
  free(o->shapes);
  o->inputs = o->shapes = NULL;
}
