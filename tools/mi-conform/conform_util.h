/* conform_util.h - helpers the rules share: descriptions of a device, knob domains, running a
 * case graph on a variant and comparing it with the reference interpreter. */
#ifndef MI_CONFORM_UTIL_H
#define MI_CONFORM_UTIL_H

#include "conform.h"

/** Every description of one device, fetched straight through the plugin's table. */
typedef struct conform_descs {
  mi_device_desc_t device;
  mi_knob_desc_t *knobs;
  uint32_t knob_count;
  mi_variant_desc_t *variants;
  uint32_t variant_count;
  mi_counter_desc_t *counters;
  uint32_t counter_count;
  mi_constraint_desc_t *constraints;
  uint32_t constraint_count;
} conform_descs_t;

int32_t conform_descs_get(conform_ctx_t *c, uint32_t dev, conform_descs_t *d, char *why,
                          size_t n);
void conform_descs_free(conform_descs_t *d);

/** R9's check of ABI 1.2 buffer views on device `dev` (rules_view.c): NULL when they behave or
 * the plugin gives none, else what failed (with the plugin's message in err). */
const char *conform_buffer_views(conform_ctx_t *c, uint32_t dev, mi_error_t *err);
const char *conform_buffer_wraps(conform_ctx_t *c, uint32_t dev, mi_error_t *err);

/** Number of '|' separated choices of an ENUM knob. */
int64_t conform_enum_count(const mi_knob_desc_t *k);
/** True when `unit` is one of the units allowed for counter `kind` (mi_plugin.h). */
int conform_unit_ok(int32_t kind, const char *unit);
/** Evaluates a non-CUSTOM constraint for values a (and b). */
int conform_constraint_holds(const mi_constraint_desc_t *k, int64_t a, int64_t b);

/** Asks the plugin whether `knobs` are valid for variant `v`: through check_config when the
 * plugin has it, else by preparing the first case graph of the variant's op.
 * MI_ERR_UNSUPPORTED when there is neither. */
int32_t conform_try_config(conform_ctx_t *c, uint32_t dev, const mi_variant_desc_t *v,
                           const mi_knob_value_t *knobs, int32_t knob_count, mi_error_t *err);

/** Runs `g` on the device with every node using `variant` and `knobs` (no host fallback) and on
 * the reference interpreter with the same seeded inputs; *rel_l2 is the worst relative L2
 * error over the outputs. Returns the session's status (MI_ERR_UNSUPPORTED when refused). */
int32_t conform_compare(conform_ctx_t *c, uint32_t dev, const mi_graph_t *g, const char *variant,
                        const mi_knob_value_t *knobs, int32_t knob_count, uint64_t seed,
                        double *rel_l2, mi_error_t *err);

/** Called after each run of conform_run_case; a non-zero answer stops the runs. */
typedef int (*conform_run_fn)(void *user, const mi_session_t *s, const mi_graph_t *g);
/** Runs case graph `g` up to `runs` times in one session, every node on `variant` with default
 * knobs and no host fallback, calling `each` after every successful run (*stopped: it asked to
 * stop). Returns the session's status. */
int32_t conform_run_case(conform_ctx_t *c, uint32_t dev, const mi_graph_t *g, const char *variant,
                         uint64_t seed, int runs, conform_run_fn each, void *user, int *stopped,
                         mi_error_t *err);

#endif
