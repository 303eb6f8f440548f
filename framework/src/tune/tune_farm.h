/* tune_farm.h - tune with options.agents: measurements queued for the farm instead of run here. */
#ifndef MI_TUNE_FARM_H
#define MI_TUNE_FARM_H

#include "metainfer/mi_farm.h"
#include "tune/tune_internal.h"

/** mi_evaluate_fn for a mi_tune_task_t whose history is a postgresql:// URL: the configuration
 * becomes a farm job, an agent with the same kind of device measures and records it, and the
 * objectives come back from the job's answer. */
int32_t mi_tune_farm_evaluate(void *ctx, const mi_space_t *s, const int32_t *pt, double *obj,
                              mi_error_t *err);

#endif
