/* space_internal.h - the representation of a joint search space, shared by the space's files. */
#ifndef MI_SPACE_INTERNAL_H
#define MI_SPACE_INTERNAL_H

#include "metainfer/mi_tune.h"
#include "space/space.h"

/* Model-side choices, by the kind of dimension (value labels live in space_model.c). */
typedef enum {
  MI__MD_PRECISION = 0, /* per weighted node */
  MI__MD_PRUNE = 1,     /* per Conv node */
  MI__MD_FUSE = 2,
  MI__MD_LAYOUT = 3,
  MI__MD_FOLD_BN = 4
} mi__model_dim;

typedef struct mi__dim {
  char *name;   /* canonical key */
  int32_t kind; /* mi_dim_kind */
  int32_t node; /* graph node, -1 when global */
  int32_t count;
  int32_t dflt;        /* default value index */
  char **labels;       /* count labels */
  int64_t *ivals;      /* knob values (INT, BOOL, ENUM index); model dims: the choice code */
  double *fvals;       /* FLOAT knobs */
  int32_t knob;        /* MI_DIM_KNOB: index into the space's knobs */
  int32_t model;       /* MI_DIM_MODEL: mi__model_dim */
  int32_t variant_dim; /* per-node knob: the node's variant dimension, -1 if none */
  uint32_t *reads;     /* per-node knob: bit v set when the node's variant v reads the knob */
} mi__dim_t;

/* The variant dimension's value 0: no variant named, the plugin chooses (ivals -1). The knob
 * masks (mi__dim_t.reads) hold one bit per value in 32 bits, so a node offers at most 31
 * explicit variants after it. */
#define MI__VARIANT_AUTO (-1)
#define MI__VARIANTS_MAX 31

/* A node the plugin can run: its variant dimension and variant indices per value. */
typedef struct mi__node {
  int32_t node; /* graph node */
  int32_t variant_dim;
  int32_t *variants; /* global variant index per value, MI__VARIANT_AUTO for value 0 */
  int32_t first_dim; /* its dimensions are [first_dim, end_dim) */
  int32_t end_dim;
} mi__node_t;

struct mi_space {
  const mi_graph_t *g;
  const mi_plugin_t *plugin;
  uint32_t device;
  mi_space_options_t opts;
  mi_device_desc_t dev;
  mi_knob_desc_t *knobs;
  uint32_t knob_count;
  mi_variant_desc_t *variants;
  uint32_t variant_count;
  mi_constraint_desc_t *cons;
  uint32_t con_count;
  int32_t dim_count, dim_cap;
  mi__dim_t *dims;
  int32_t *name_order; /* the dimensions sorted by name (canonical text order), set once built */
  int32_t node_count;
  mi__node_t *nodes;
  int32_t *device_dim; /* per knob: its device-scope dimension, -1 if none */
  /* Probing at build time (space_probe.c): constant views, answers per (signature, variant). */
  struct mi_array **probe_consts;
  struct {
    uint64_t sig;
    int32_t variant, ok;
  } * probe_cache;
  int32_t probe_cache_n, probe_cache_cap;
  int32_t probes, pruned;      /* kernel_prepare calls; (node, variant) pairs removed */
  mi_error_t probe_err;        /* why a probe in the worker failed (mi__space_probe returned -1) */
  struct mi__space_asks *asks; /* check_config answers from the worker (space_ask.c) */
};

/* space_ops.c: s->name_order, the order of the canonical text (a whole model's space has
 * thousands of dimensions, and every hash of a point is one canonical text) */
int32_t mi__space_sort_names(mi_space_t *s, mi_error_t *err);

/* space_build.c */
int32_t mi__space_add_dim(mi_space_t *s, const char *name, int32_t kind, int32_t node,
                          int32_t count, mi_error_t *err);
int mi__list_has(const char *list, const char *item);
/* space_model.c */
int32_t mi__space_add_model_dims(mi_space_t *s, mi_error_t *err);
/* The precision choices of node `node` are those whose dtypes its variants (`dtypes`, the union of
 * their dtype masks) compute in. */
int32_t mi__space_add_node_model_dims(mi_space_t *s, int32_t node, uint32_t dtypes, mi_error_t *err);
uint32_t mi__space_precision_dtypes(void);
/* 1 for a variant the executor runs where a layer's precision says so and never a kernel choice:
 * one that computes in BF16 and not in FLOAT32 (exec/bf16_in.c). */
int mi__space_precision_variant(uint32_t dtype_mask);
/* space_probe.c */
int32_t mi__space_probe_begin(mi_space_t *s);
void mi__space_probe_end(mi_space_t *s);
/* 1: the variant prepares the node, 0: the plugin refuses it, -1: the probe itself failed in
 * the device's worker (crashed, hung; s->probe_err says so). */
int mi__space_probe(mi_space_t *s, int32_t node, int32_t variant);
/* space_ask.c: check_config in the device's worker when opts.probe_pool is set, else here. */
int32_t mi__space_asks_begin(mi_space_t *s);
void mi__space_asks_end(mi_space_t *s);
int32_t mi__space_ask_check(const mi_space_t *s, const char *vid, const mi_knob_value_t *vals,
                            int32_t n, mi_error_t *why);
/* space_ops.c */
void mi__space_normalize(const mi_space_t *s, int32_t *pt);

#endif
