/* args.c - the mi-run command line: the options (through mi_cli), validation of numbers, and
 * the help text. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mi_cli.h"
#include "mi_run.h"

#define OPTIONS(X)                                                                           \
  X(O_MODEL, "model", "FILE", "the ONNX model")                                              \
  X(O_DEVICE, "device", "DEV", "'ref' (reference interpreter) or PLUGIN:INDEX (blis-cpu:0)") \
  MI_CLI_OPT_PLUGINS(X)                                                                      \
  MI_CLI_OPT_FALLBACK(X)                                                                     \
  X(O_INPUT, "input", "NAME=FILE",                                                           \
    "a model input from a .npy file (repeatable); its shape\n"                               \
    "replaces the model's dynamic dims")                                                     \
  X(O_SHAPE, "shape", "NAME=D0,D1..",                                                        \
    "the shape of an input without a file (repeatable); needed\n"                            \
    "when the input has dynamic dims. Other inputs get\n"                                    \
    "deterministic random data of the declared shape")                                       \
  X(O_VALUE, "value", "NAME=V0,V1..",                                                        \
    "fix an input to a value (repeatable; numbers or true/false):\n"                         \
    "it becomes a constant, and an If it decides is replaced by\n"                           \
    "the branch it takes before anything runs")                                              \
  X(O_SEED, "seed", "S", "seed of the random inputs (default 0)")                            \
  X(O_CONFIG, "config", "C.yaml",                                                            \
    "apply a model-side transform configuration first (BN\n"                                 \
    "folding, pruning, padding, quantization, layout, fusion for\n"                          \
    "the device's variants; see docs/transforms.md) and list\n"                              \
    "the passes")                                                                            \
  MI_CLI_OPTS_OUTPUT_DIR(X)                                                                  \
  X(O_REPEAT, "repeat", "N", "N timed runs after the warm-up: median, p10, p90, CV")         \
  X(O_WARMUP, "warmup", "N", "warm-up runs before timing (default 2 with --repeat)")         \
  X(O_GAP, "gap", "MS",                                                                      \
    "idle milliseconds before each run, outside its timing, as a\n"                          \
    "streaming caller leaves between inputs (a 32 ms VAD window,\n"                          \
    "an 80 ms audio hop): the device's threads may sleep in it\n"                            \
    "(default 0: runs back to back)")                                                        \
  X(O_THREADS, "threads", "N", "set the device knob 'threads' when the plugin has it")       \
  X(O_PROFILE, "profile", NULL,                                                              \
    "per-layer table after the summary, slowest first: node, op,\n"                          \
    "shapes, variant, ms, share, GFLOP/s or GB/s (20 timed runs\n"                           \
    "unless --repeat says otherwise)")                                                       \
  MI_CLI_OPT_JSON_SUMMARY(X)                                                                 \
  X(O_CHECK, "check", NULL,                                                                  \
    "compare the last run's outputs with the reference\n"                                    \
    "interpreter's on the same inputs (one reference run, often\n"                           \
    "slower than the device's); wrong results fail with exit 1")                             \
  X(O_TIMEOUT, "timeout", "S",                                                               \
    "a plugin's code runs in a child of mi-run: give up on it when\n"                        \
    "one step (loading, preparing, one run) takes more than S\n"                             \
    "seconds (default 60; 0: never)")                                                        \
  X(O_DEPLOYMENT, "deployment", "FILE",                                                      \
    "run a tuned deployment table instead (see\n"                                            \
    "mi-run --deployment --help)")
MI_CLI_TABLE(OPTIONS, k_opts);

static mi_cli_t cli(void) {
  mi_cli_t c = {0};
  c.prog = "mi-run";
  c.usage =
      "mi-run [--plugins DIR]... --model M.onnx --device DEV [options]\n"
      "mi-run --deployment DIR/deployment.yaml [options]   (see mi-run --deployment --help)";
  c.about = "Runs an ONNX model once (or --repeat N times) and reports outputs and latency.";
  c.opts = k_opts;
  c.footer =
      "Exit status: 0 on success, 2 for bad input (model, .npy, names, shapes, device),\n"
      "1 when the device itself failed.";
  c.flags = MI_CLI_VERSION_OPT | MI_CLI_NO_ARGS;
  return c;
}

static int push(const mi_cli_t *c, const char ***list, int *count, const char *v) {
  const char **grown = realloc(*list, (size_t)(*count + 1) * sizeof *grown);
  if (!grown) return mi_cli_error(c, "out of memory");
  grown[(*count)++] = v;
  *list = grown;
  return 0;
}

int run_parse_args(int argc, char **argv, run_opts_t *o, int *status) {
  mi_cli_t c = cli();
  int k, st = MI_CLI_GO_ON, rc = 0;
  memset(o, 0, sizeof *o);
  o->warmup = -1;
  o->timeout_s = RUN_DEFAULT_TIMEOUT_S;
  *status = 0;
  mi_cli_begin(&c, argc, argv);
  while (rc == 0 && (k = mi_cli_step(&c, &st))) {
    switch (k) {
    case O_MODEL: o->model = c.value; break;
    case O_DEVICE: o->device = c.value; break;
    case O_PLUGINS: o->plugins_dir = mi_cli_add_plugin_dir(o->plugins_dir, c.value); break;
    case O_FALLBACK: o->fallback = c.value; break;
    case O_OUTPUT_DIR:
    case O_OUTPUT: o->output_dir = c.value; break;
    case O_CONFIG: o->config = c.value; break;
    case O_JSON: o->json = 1; break;
    case O_PROFILE: o->profile = 1; break;
    case O_CHECK: o->check = 1; break;
    case O_INPUT: rc = push(&c, &o->inputs, &o->input_count, c.value); break;
    case O_SHAPE: rc = push(&c, &o->shapes, &o->shape_count, c.value); break;
    case O_VALUE: rc = push(&c, &o->values, &o->value_count, c.value); break;
    case O_REPEAT: rc = mi_cli_int_to(&c, 0, 1000000000, &o->repeat); break;
    case O_WARMUP: rc = mi_cli_int_to(&c, 1, 1000000000, &o->warmup); break;
    case O_GAP: {
      char *end = NULL;
      errno = 0;
      o->gap_ms = strtod(c.value, &end);
      if (errno || end == c.value || *end || !(o->gap_ms >= 0 && o->gap_ms <= 3600e3))
        rc = mi_cli_error(&c, "--gap '%s': expected milliseconds from 0 to 3600000", c.value);
      break;
    }
    case O_TIMEOUT: rc = mi_cli_int_to(&c, 0, 1000000, &o->timeout_s); break;
    case O_THREADS: rc = mi_cli_int_to(&c, 0, 1000000000, &o->threads); break;
    case O_SEED: {
      char *end = NULL;
      errno = 0;
      o->seed = strtoull(c.value, &end, 10);
      if (errno || end == c.value || *end || c.value[0] == '-')
        rc = mi_cli_error(&c, "--seed '%s': expected an unsigned integer", c.value);
      break;
    }
    default: rc = mi_cli_error(&c, "%s is not handled here", c.opt); break;
    }
  }
  if (st == 0) return 0; /* --help or --version */
  if (st == MI_CLI_USAGE) rc = st;
  if (rc == 0 && !o->model) rc = mi_cli_error(&c, "--model is required");
  if (rc == 0 && !o->device) rc = mi_cli_error(&c, "--device is required ('ref' or PLUGIN:INDEX)");
  if (rc) {
    *status = 2;
    return 0;
  }
  return 1;
}

void run_free_args(run_opts_t *o) {
  free(o->inputs);
  free(o->shapes);
  free(o->values);
  o->inputs = o->shapes = o->values = NULL;
}
