/* pg_farm_internal.h - the farm handle shared by pg_farm.c (tables, blobs, agents) and
 * pg_jobs.c (the job queue). */
#ifndef MI_PG_FARM_INTERNAL_H
#define MI_PG_FARM_INTERNAL_H

#include "history/pg_internal.h"
#include "metainfer/mi_farm.h"

#ifdef MI_HAVE_LIBPQ
struct mi_farm {
  PGconn *c;
  int listening_jobs, listening_done;
};

/* Waits for a notification on the connection up to timeout_s; drains every pending one. */
int32_t mi__farm_sleep(mi_farm_t *f, double timeout_s, mi_error_t *err);
#endif

#endif
