/* main.c - mi-zoo: writes ONNX models of common families with deterministic weights. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mi_cli.h"
#include "zoo.h"

static void list(void) {
  for (int32_t i = 0; i < mi_zoo_family_count(); i++) {
    const mi_zoo_family_t *f = mi_zoo_family_at(i);
    printf("%-12s %s (depth %d, resolution %d, opset %lld, output [B,%d])\n", f->name,
           f->summary, (int)f->default_depth, (int)f->default_resolution, (long long)f->opset,
           (int)f->classes);
  }
}

#define OPTIONS(X)                                                             \
  X(O_OUT, "out", "M.onnx", "the model file to write (its folder is created)") \
  X(O_WIDTH, "width", "W", "channel / hidden-size multiplier (default 1.0)")   \
  X(O_DEPTH, "depth", "D", "number of blocks or layers (default: per family)") \
  X(O_RESOLUTION, "resolution", "R",                                           \
    "input size: image side, KWS frames, MLP side, sequence\n"                 \
    "length")                                                                  \
  X(O_SEED, "seed", "S", "weight seed (default 0)")                            \
  X(O_BATCH, "batch", "B", "batch dimension (default 1)")                      \
  X(O_LIST, "list", NULL, "list the families")
MI_CLI_TABLE(OPTIONS, k_opts);

/* Parses argv into the options; returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, const char **name, const char **out,
                 mi_zoo_options_t *o) {
  mi_cli_t c = {0};
  char limits[160];
  long long v = 0;
  int k, st;
  snprintf(limits, sizeof limits, "Limits: --width at most %g, --depth at most %d, --batch at most %d.",
           MI_ZOO_MAX_WIDTH, MI_ZOO_MAX_DEPTH, MI_ZOO_MAX_BATCH);
  c.prog = "mi-zoo";
  c.usage =
      "mi-zoo --list\n"
      "mi-zoo NAME --out M.onnx [--width W] [--depth D] [--resolution R] [--seed S] [--batch B]";
  c.about =
      "Writes a model of family NAME with weights drawn from the seed: the same options give\n"
      "the same bytes.";
  c.opts = k_opts;
  c.footer = limits;
  c.flags = MI_CLI_VERSION_OPT;
  mi_cli_begin(&c, argc, argv);
  while ((k = mi_cli_step(&c, &st))) {
    switch (k) {
    case O_LIST: list(); return 0;
    case O_OUT: *out = c.value; break;
    case MI_CLI_ARG:
      if (*name) return mi_cli_error(&c, "unexpected argument '%s' (one family name only)", c.value);
      *name = c.value;
      break;
    case O_WIDTH:
      /* 0 means "default" in the library; on the command line it is a mistake. */
      if (mi_cli_double(&c, 1e-9, 1e9, &o->width)) return 2;
      break;
    case O_DEPTH:
    case O_RESOLUTION:
    case O_BATCH:
      if (mi_cli_int(&c, 1, 2147483647, &v)) return 2;
      *(k == O_DEPTH ? &o->depth : k == O_RESOLUTION ? &o->resolution
                                                     : &o->batch) = (int32_t)v;
      break;
    case O_SEED: {
      char *end;
      errno = 0;
      o->seed = strtoull(c.value, &end, 0);
      if (errno || end == c.value || *end || c.value[0] == '-')
        return mi_cli_error(&c, "--seed: '%s' is not an unsigned integer", c.value);
      break;
    }
    }
  }
  if (st != MI_CLI_GO_ON) return st;
  if (!*name || !*out || !**out)
    return mi_cli_error(&c, "%s", !*name ? "missing family name" : "missing --out FILE");
  return -1;
}

static void print_dims(const mi_tensor_t *t) {
  printf("[");
  for (int32_t d = 0; d < t->rank; d++) printf("%s%lld", d ? "," : "", (long long)t->dims[d]);
  printf("]");
}

int main(int argc, char **argv) {
  const char *name = NULL, *out = NULL;
  mi_zoo_options_t opt;
  mi_error_t err = {0, ""};
  mi_graph_t *g = NULL;
  char tmp[4096];
  int rc, n;
  mi_zoo_options_default(&opt);
  if ((rc = parse(argc, argv, &name, &out, &opt)) >= 0) return rc;
  rc = mi_zoo_build(name, &opt, &g, &err);
  if (rc != MI_OK) {
    fprintf(stderr, "%s\n", err.message);
    return rc == MI_ERR_INVALID_ARGUMENT || rc == MI_ERR_NOT_FOUND ? 2 : 1;
  }
  /* Write next to the target, then rename: a reader never sees half a model. */
  n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof tmp) {
    fprintf(stderr, "mi-zoo: --out: path too long\n");
    rc = 2;
  } else if (mi_cli_make_parent_dirs(out, &err) != MI_OK) {
    fprintf(stderr, "mi-zoo: cannot write %s: %s\n", out, err.message);
    rc = 2;
  } else if (mi_onnx_save(g, tmp, &err) != MI_OK) {
    fprintf(stderr, "mi-zoo: cannot write %s: %s\n", out, err.message);
    unlink(tmp);
    rc = 2;
  } else if (rename(tmp, out) != 0) {
    fprintf(stderr, "mi-zoo: cannot write %s: %s\n", out, strerror(errno));
    unlink(tmp);
    rc = 2;
  } else {
    printf("mi-zoo: wrote %s: %s, opset %lld, %d nodes, %lld parameters, input ", out, name,
           (long long)g->opset, (int)g->node_count, (long long)mi_zoo_param_count(g));
    print_dims(&g->tensors[g->inputs[0]]);
    printf(", output ");
    print_dims(&g->tensors[g->outputs[0]]);
    printf("\n");
  }
  mi_graph_destroy(g);
  return rc;
}
