/* test_zoo.c - every mi-zoo family round-trips through ONNX, infers shapes and runs on the
 * reference interpreter with finite, non-degenerate outputs; seeds are deterministic. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metainfer/mi.h"
#include "zoo.h"

#include "test_util.h"

typedef struct config {
  const char *family;
  double width;
  int32_t depth, resolution, batch;
} config_t;

/* Each family at its defaults (zeros) and at a non-default width, depth, resolution and batch,
 * small enough for the reference interpreter to stay quick. */
static const config_t configs[] = {
    {"mobilenetv2", 0, 0, 0, 0},
    {"mobilenetv2", 0.5, 3, 40, 2},
    {"mobilenetv3", 0, 0, 0, 0},
    {"mobilenetv3", 0.75, 6, 64, 2},
    {"resnet", 0, 0, 0, 0},
    {"resnet", 0.5, 6, 48, 2},
    {"transformer", 0, 0, 0, 0},
    {"transformer", 1.5, 3, 7, 2},
    {"mlp", 0, 0, 0, 0},
    {"mlp", 0.5, 4, 12, 3},
    {"kws", 0, 0, 0, 0},
    {"kws", 0.5, 2, 31, 2},
};

static char dir[64];

static mi_zoo_options_t options(const config_t *c, uint64_t seed) {
  mi_zoo_options_t o;
  mi_zoo_options_default(&o);
  if (c->width > 0) o.width = c->width;
  o.depth = c->depth;
  o.resolution = c->resolution;
  o.batch = c->batch;
  o.seed = seed;
  return o;
}

static int save(const char *family, const mi_zoo_options_t *o, const char *path) {
  mi_graph_t *g = NULL;
  mi_error_t err = {0, ""};
  int32_t rc = mi_zoo_build(family, o, &g, &err);
  if (rc == MI_OK) rc = mi_onnx_save(g, path, &err);
  mi_graph_destroy(g);
  CHECK(rc == MI_OK, "%s: %s", family, err.message);
  return rc;
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  unsigned char *buf = NULL;
  long len;
  *n = 0;
  if (!f) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
    buf = malloc((size_t)len);
    if (buf && fread(buf, 1, (size_t)len, f) == (size_t)len) *n = (size_t)len;
  }
  fclose(f);
  return buf;
}

static int same_file(const char *a, const char *b) {
  size_t na, nb;
  unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
  int same = x && y && na == nb && na > 0 && memcmp(x, y, na) == 0;
  free(x);
  free(y);
  return same;
}

static void check_names(const mi_graph_t *g, const char *what) {
  for (int32_t i = 0; i < g->node_count; i++) {
    CHECK(g->nodes[i].name && g->nodes[i].name[0], "%s: node %d has no name", what, (int)i);
    for (int32_t j = 0; j < i; j++)
      CHECK(strcmp(g->nodes[i].name, g->nodes[j].name) != 0, "%s: node name %s repeats", what,
            g->nodes[i].name);
  }
  for (int32_t i = 0; i < g->tensor_count; i++) {
    CHECK(g->tensors[i].name && g->tensors[i].name[0], "%s: tensor %d unnamed", what, (int)i);
    for (int32_t j = 0; j < i; j++)
      CHECK(strcmp(g->tensors[i].name, g->tensors[j].name) != 0, "%s: tensor name %s repeats",
            what, g->tensors[i].name);
  }
}

/* Loads the file, re-infers every non-constant shape and runs it on the reference path. */
static void check_model(const config_t *c, const char *path, int64_t batch, int64_t classes) {
  mi_graph_t *g = NULL;
  mi_error_t err = {0, ""};
  mi_array_t *in = NULL, *out = NULL;
  const mi_tensor_t *ti, *to;
  char what[96];
  snprintf(what, sizeof what, "%s w=%g d=%d r=%d b=%d", c->family, c->width, (int)c->depth,
           (int)c->resolution, (int)c->batch);
  if (mi_onnx_load(path, &g, &err) != MI_OK) {
    CHECK(0, "%s: load: %s", what, err.message);
    return;
  }
  check_names(g, what);
  CHECK(g->input_count == 1 && g->output_count == 1, "%s: %d inputs, %d outputs", what,
        (int)g->input_count, (int)g->output_count);
  if (g->input_count != 1 || g->output_count != 1) goto done;
  /* Forget what the file declared, so the shapes checked below are the inferred ones. */
  for (int32_t i = 0; i < g->tensor_count; i++)
    if (!g->tensors[i].data && i != g->inputs[0]) g->tensors[i].rank = -1;
  if (mi_graph_infer_shapes(g, &err) != MI_OK) {
    CHECK(0, "%s: infer_shapes: %s", what, err.message);
    goto done;
  }
  to = &g->tensors[g->outputs[0]];
  CHECK(to->rank == 2 && to->dims[0] == batch && to->dims[1] == classes,
        "%s: inferred output rank %d [%lld, %lld], want [%lld, %lld]", what, (int)to->rank,
        (long long)to->dims[0], (long long)to->dims[1], (long long)batch, (long long)classes);
  ti = &g->tensors[g->inputs[0]];
  in = mi_array_create(MI_DTYPE_FLOAT32, ti->rank, ti->dims);
  CHECK(in != NULL, "%s: input array", what);
  if (!in) goto done;
  mi_array_fill_random(in, 42);
  if (mi_ref_run(g, (const mi_array_t *const *)&in, 1, &out, 1, &err) != MI_OK) {
    CHECK(0, "%s: ref_run: %s", what, err.message);
    goto done;
  }
  CHECK(out->rank == 2 && out->dims[0] == batch && out->dims[1] == classes,
        "%s: ref output shape wrong", what);
  if (out->rank == 2 && out->dtype == MI_DTYPE_FLOAT32) {
    const float *v = out->data;
    int64_t n = mi_array_numel(out), finite = 0, distinct = 0;
    float amax = 0;
    for (int64_t i = 0; i < n; i++) {
      if (isfinite(v[i])) finite++;
      if (i > 0 && v[i] != v[0]) distinct++;
      if (fabsf(v[i]) > amax) amax = fabsf(v[i]);
    }
    CHECK(finite == n, "%s: %lld of %lld outputs not finite", what, (long long)(n - finite),
          (long long)n);
    CHECK(distinct > 0, "%s: all %lld outputs equal %g", what, (long long)n, (double)v[0]);
    /* He-scaled weights keep logits near 1; far beyond means the scaling broke. */
    CHECK(amax < 1e3f, "%s: output magnitude %g", what, (double)amax);
  }
done:
  mi_array_destroy(in);
  mi_array_destroy(out);
  mi_graph_destroy(g);
}

static void check_bad_options(void) {
  mi_graph_t sentinel, *g = &sentinel; /* a failing build must reset it to NULL */
  mi_error_t err = {0, ""};
  mi_zoo_options_t o;
  mi_zoo_options_default(&o);
  CHECK(mi_zoo_build("alexnet", &o, &g, &err) == MI_ERR_NOT_FOUND && g == NULL,
        "unknown family: %s", err.message);
  CHECK(strstr(err.message, "alexnet") != NULL, "message names the family: %s", err.message);
  o.width = -1;
  g = &sentinel;
  CHECK(mi_zoo_build("mlp", &o, &g, &err) == MI_ERR_INVALID_ARGUMENT && g == NULL,
        "negative width accepted");
  CHECK(strstr(err.message, "width") != NULL, "message names the width: %s", err.message);
  mi_zoo_options_default(&o);
  o.depth = MI_ZOO_MAX_DEPTH + 1;
  CHECK(mi_zoo_build("resnet", &o, &g, &err) == MI_ERR_INVALID_ARGUMENT, "depth too large");
  mi_zoo_options_default(&o);
  o.resolution = 16; /* the default MobileNetV2 strides by 32 */
  g = &sentinel;
  CHECK(mi_zoo_build("mobilenetv2", &o, &g, &err) == MI_ERR_INVALID_ARGUMENT && g == NULL,
        "resolution below the stride accepted");
  CHECK(strstr(err.message, "resolution") != NULL, "message: %s", err.message);
  o.depth = 1; /* stem and one stride-1 block: a stride of 2 allows 16 */
  CHECK(mi_zoo_build("mobilenetv2", &o, &g, &err) == MI_OK && g != NULL, "depth 1 at 16: %s",
        err.message);
  mi_graph_destroy(g);
  mi_zoo_options_default(&o);
  o.resolution = 9;
  CHECK(mi_zoo_build("kws", &o, &g, &err) == MI_ERR_INVALID_ARGUMENT, "kws with 9 frames");
  mi_zoo_options_default(&o);
  o.batch = -2;
  CHECK(mi_zoo_build("kws", &o, &g, &err) == MI_ERR_INVALID_ARGUMENT, "negative batch");
}

static int32_t nconf = (int32_t)(sizeof configs / sizeof configs[0]);
static char a[128], b[128], c2[128];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/mi-test-zoo-XXXXXX");
  REQUIRE(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static void teardown(void) { rmdir(dir); }

static void family_count(void) {
  CHECK(mi_zoo_family_count() == 6, "family count %d", (int)mi_zoo_family_count());
}

static void families(void) {
  for (int32_t i = 0; i < nconf; i++) {
    const config_t *c = &configs[i];
    const mi_zoo_family_t *f = mi_zoo_family_find(c->family);
    mi_zoo_options_t o = options(c, 1234);
    CHECK(f != NULL, "family %s not listed", c->family);
    if (!f) continue;
    snprintf(a, sizeof a, "%s/%d-a.onnx", dir, (int)i);
    snprintf(b, sizeof b, "%s/%d-b.onnx", dir, (int)i);
    snprintf(c2, sizeof c2, "%s/%d-c.onnx", dir, (int)i);
    if (save(c->family, &o, a) != MI_OK || save(c->family, &o, b) != MI_OK) continue;
    CHECK(same_file(a, b), "%s: same seed gave different files", c->family);
    o.seed = 1235;
    if (save(c->family, &o, c2) == MI_OK)
      CHECK(!same_file(a, c2), "%s: another seed gave the same file", c->family);
    check_model(c, a, c->batch ? c->batch : 1, f->classes);
    unlink(a);
    unlink(b);
    unlink(c2);
  }
}

static const tu_case_t tu_cases[] = {
    TU_CASE(family_count),
    TU_CASE(families),
    TU_CASE(check_bad_options),
};

TU_MAIN(setup, teardown)
