/* names.c - printable names of the ABI's enums and bit masks, shared by mi-host's commands. */
#include <string.h>

#include "mi_host_names.h"

static const char *const k_dtypes[] = {"undefined", "float32", "float16", "int8", "uint8",
                                       "int4", "int32", "int64", "bool"};
static const char *const k_layouts[] = {"any", "nchw", "nhwc", "nchwc"};
static const char *const k_fuse[] = {"bias", "bn", "relu", "act", "add", "conv", "member_choices"};
static const char *const k_kinds[] = {"cpu", "gpu", "npu", "other"};
static const char *const k_scopes[] = {"device", "op", "variant"};
static const char *const k_types[] = {"int", "float", "bool", "enum"};
static const char *const k_mut[] = {"prepare", "run", "init"};
static const char *const k_counters[] = {"timer", "memory", "energy", "power",
                                         "frequency", "temperature", "other"};
static const char *const k_constraints[] = {"divides", "less_equal", "product_le", "implies",
                                            "custom"};

#define PICK(table, v) \
  ((v) >= 0 && (size_t)(v) < sizeof table / sizeof table[0] ? table[v] : "unknown")

const char *mi_name_device_kind(int32_t v) { return PICK(k_kinds, v); }
const char *mi_name_knob_scope(int32_t v) { return PICK(k_scopes, v); }
const char *mi_name_knob_type(int32_t v) { return PICK(k_types, v); }
const char *mi_name_knob_mutability(int32_t v) { return PICK(k_mut, v); }
const char *mi_name_counter_kind(int32_t v) { return PICK(k_counters, v); }
const char *mi_name_constraint_kind(int32_t v) { return PICK(k_constraints, v); }

const char *mi_name_mask_bit(int which, unsigned bit) {
  switch (which) {
  case MI_MASK_DTYPE: return bit < sizeof k_dtypes / sizeof *k_dtypes ? k_dtypes[bit] : NULL;
  case MI_MASK_LAYOUT: return bit < sizeof k_layouts / sizeof *k_layouts ? k_layouts[bit] : NULL;
  case MI_MASK_FUSE: return bit < sizeof k_fuse / sizeof *k_fuse ? k_fuse[bit] : NULL;
  }
  return NULL;
}
