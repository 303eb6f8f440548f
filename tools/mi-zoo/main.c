/* main.c - mi-zoo: writes ONNX models of common families with deterministic weights. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zoo.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: mi-zoo --list\n"
          "       mi-zoo NAME --out M.onnx [--width W] [--depth D] [--resolution R] [--seed S]"
          " [--batch B]\n"
          "Writes a model of family NAME with weights drawn from the seed: the same options give"
          " the same bytes.\n"
          "  --width W       channel / hidden-size multiplier (default 1.0, at most %g)\n"
          "  --depth D       number of blocks or layers (default: per family, at most %d)\n"
          "  --resolution R  input size: image side, KWS frames, MLP side, sequence length\n"
          "  --seed S        weight seed (default 0)\n"
          "  --batch B       batch dimension (default 1, at most %d)\n",
          MI_ZOO_MAX_WIDTH, MI_ZOO_MAX_DEPTH, MI_ZOO_MAX_BATCH);
}

static void list(void) {
  for (int32_t i = 0; i < mi_zoo_family_count(); i++) {
    const mi_zoo_family_t *f = mi_zoo_family_at(i);
    printf("%-12s %s (depth %d, resolution %d, opset %lld, output [B,%d])\n", f->name,
           f->summary, (int)f->default_depth, (int)f->default_resolution, (long long)f->opset,
           (int)f->classes);
  }
}

static int parse_int(const char *opt, const char *s, int32_t *out) {
  char *end;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < -2147483647L || v > 2147483647L) {
    fprintf(stderr, "mi-zoo: %s: '%s' is not an integer\n", opt, s);
    return -1;
  }
  *out = (int32_t)v;
  return 0;
}

/* Parses argv into the options; returns 0, or 2 after printing one line. */
static int parse(int argc, char **argv, const char **name, const char **out,
                 mi_zoo_options_t *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    char *end;
    if (a[0] != '-') {
      if (*name) {
        fprintf(stderr, "mi-zoo: unexpected argument '%s' (one family name only)\n", a);
        return 2;
      }
      *name = a;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "mi-zoo: unknown option or missing value: %s (see --help)\n", a);
      return 2;
    }
    v = argv[++i];
    if (strcmp(a, "--out") == 0) {
      *out = v;
    } else if (strcmp(a, "--width") == 0) {
      errno = 0;
      o->width = strtod(v, &end);
      if (errno || end == v || *end) {
        fprintf(stderr, "mi-zoo: --width: '%s' is not a number\n", v);
        return 2;
      }
      /* 0 means "default" in the library; on the command line it is a mistake. */
      if (!(o->width > 0.0)) {
        fprintf(stderr, "mi-zoo: --width: %s must be greater than 0\n", v);
        return 2;
      }
    } else if (strcmp(a, "--depth") == 0 || strcmp(a, "--resolution") == 0 ||
               strcmp(a, "--batch") == 0) {
      int32_t *dst = a[2] == 'd' ? &o->depth : a[2] == 'r' ? &o->resolution : &o->batch;
      if (parse_int(a, v, dst) != 0) return 2;
      if (*dst < 1) {
        fprintf(stderr, "mi-zoo: %s: %s must be at least 1\n", a, v);
        return 2;
      }
    } else if (strcmp(a, "--seed") == 0) {
      errno = 0;
      o->seed = strtoull(v, &end, 0);
      if (errno || end == v || *end || v[0] == '-') {
        fprintf(stderr, "mi-zoo: --seed: '%s' is not an unsigned integer\n", v);
        return 2;
      }
    } else {
      fprintf(stderr, "mi-zoo: unknown option %s (see --help)\n", a);
      return 2;
    }
  }
  return 0;
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
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    }
    if (strcmp(argv[i], "--list") == 0) {
      list();
      return 0;
    }
  }
  mi_zoo_options_default(&opt);
  rc = parse(argc, argv, &name, &out, &opt);
  if (rc != 0) return rc;
  if (!name || !out || !*out) {
    fprintf(stderr, "mi-zoo: %s (see --help)\n",
            !name ? "missing family name" : "missing --out FILE");
    return 2;
  }
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
