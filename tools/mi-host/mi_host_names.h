/* mi_host_names.h - printable names of the ABI's enums and bit masks. */
#ifndef MI_HOST_NAMES_H
#define MI_HOST_NAMES_H

#include <stdint.h>

enum { MI_MASK_DTYPE,
       MI_MASK_LAYOUT,
       MI_MASK_FUSE };

/** Names of enum values; "unknown" for values this build does not know. */
const char *mi_name_device_kind(int32_t v);
const char *mi_name_knob_scope(int32_t v);
const char *mi_name_knob_type(int32_t v);
const char *mi_name_knob_mutability(int32_t v);
const char *mi_name_counter_kind(int32_t v);
const char *mi_name_constraint_kind(int32_t v);
/** Name of bit `bit` of a dtype, layout or fuse mask; NULL when unknown. */
const char *mi_name_mask_bit(int which, unsigned bit);

#endif
