/* deploy.h - what the deploy module offers the tuner beyond the public API: a point of the
 * space as a stored configuration, the one conversion both the tuner (writing the table) and
 * the runtime (re-adapting) make. */
#ifndef MI_DEPLOY_DEPLOY_H
#define MI_DEPLOY_DEPLOY_H

#include "metainfer/mi_runtime.h"
#include "metainfer/mi_tune.h"

/** Fills c->keys, c->values and c->kv_count from the space's canonical "key=value" lines of
 * `pt` (other fields untouched); the arrays have room for `spare` more pairs. On error the
 * strings already copied stay in `c` for its owner's clear. */
int32_t mi__deploy_config_from_point(const mi_space_t *s, const int32_t *pt, int32_t spare,
                                     mi_deploy_config_t *c, mi_error_t *err);

#endif
