/* zoo.h - mi-zoo: deterministic generators of small models of common families, as IR graphs. */
#ifndef METAINFER_ZOO_H
#define METAINFER_ZOO_H

#include <stdint.h>

#include "metainfer/mi.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How to scale a generated model. Fill with mi_zoo_options_default(), then change fields.
 * A field left at 0 takes the family's default. */
typedef struct mi_zoo_options {
  double width;       /* channel / hidden-size multiplier, > 0 (0 = 1.0) */
  int32_t depth;      /* number of blocks or layers (0 = family default) */
  int32_t resolution; /* input size: image side, KWS frames, sequence length (0 = default) */
  uint64_t seed;      /* weights are a pure function of the seed and the other options */
  int32_t batch;      /* batch dimension (0 = 1) */
} mi_zoo_options_t;

/** One model family the zoo can build. */
typedef struct mi_zoo_family {
  const char *name;    /* "mobilenetv2", ... */
  const char *summary; /* one line for --list */
  int32_t default_depth;
  int32_t default_resolution;
  int32_t min_resolution; /* smallest input the stride pattern allows at the default depth */
  int32_t max_resolution;
  int32_t classes; /* the output is [batch, classes] */
  int64_t opset;
  const char *input_name;
} mi_zoo_family_t;

/** Upper bounds on the options, so that a typo cannot ask for a model of gigabytes. */
#define MI_ZOO_MAX_WIDTH 4.0
#define MI_ZOO_MAX_DEPTH 64
#define MI_ZOO_MAX_BATCH 1024

/** Sets every field to its default (width 1.0, family depth and resolution, seed 0, batch 1). */
void mi_zoo_options_default(mi_zoo_options_t *opt);

/** Number of families, and each family by index (NULL out of range). */
int32_t mi_zoo_family_count(void);
const mi_zoo_family_t *mi_zoo_family_at(int32_t index);
/** The family named `name`, or NULL. */
const mi_zoo_family_t *mi_zoo_family_find(const char *name);

/** Builds a model of `family` with `opt` (NULL = defaults). On success *out is a new graph in
 * topological order whose one input and one output carry full static shapes; the caller
 * destroys it. MI_ERR_NOT_FOUND for an unknown family, MI_ERR_INVALID_ARGUMENT for an option
 * out of range (err says which and why); *out is NULL on failure. */
int32_t mi_zoo_build(const char *family, const mi_zoo_options_t *opt, mi_graph_t **out,
                     mi_error_t *err);

/** Number of weight values (elements of every constant float tensor) in `g`. */
int64_t mi_zoo_param_count(const mi_graph_t *g);

#ifdef __cplusplus
}
#endif
#endif /* METAINFER_ZOO_H */
