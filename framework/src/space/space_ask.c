/* space_ask.c - check_config asked where the plugin runs: with a probe pool the plugin in this
 * process is a stand-in described in isolation, so the question goes to the device's worker,
 * and each answer is kept per (variant, knob values) since a search asks the same ones often. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metainfer/mi_measure.h"
#include "space_internal.h"

#define ASK_SLOTS 8192 /* open addressing; the table starts over when half full */

typedef struct ask {
  uint64_t key; /* 0: empty */
  int32_t status;
  mi_error_t why;
} ask_t;

struct mi__space_asks {
  ask_t *slot;
  int32_t n;
  char failed[MI_ERROR_MESSAGE_SIZE]; /* the first question the worker did not answer */
};

int32_t mi__space_asks_begin(mi_space_t *s) {
  if (!s->opts.probe_pool || !s->plugin->api.check_config) return MI_OK;
  if (!(s->asks = calloc(1, sizeof *s->asks)) ||
      !(s->asks->slot = calloc(ASK_SLOTS, sizeof *s->asks->slot))) {
    mi__space_asks_end(s);
    return MI_ERR_OUT_OF_MEMORY;
  }
  return MI_OK;
}

void mi__space_asks_end(mi_space_t *s) {
  if (s->asks) free(s->asks->slot);
  free(s->asks);
  s->asks = NULL;
}

MI_API void mi_space_detach_pool(mi_space_t *s) {
  if (s) s->opts.probe_pool = NULL;
}

MI_API const char *mi_space_ask_failure(const mi_space_t *s) {
  return s && s->asks && s->asks->failed[0] ? s->asks->failed : NULL;
}

static uint64_t ask_key(const char *vid, const mi_knob_value_t *v, int32_t n) {
  uint64_t h = mi_hash64(vid ? vid : "", vid ? strlen(vid) + 1 : 0, 0x61736bu);
  for (int32_t i = 0; i < n; i++) {
    h = mi_hash64(v[i].name ? v[i].name : "", v[i].name ? strlen(v[i].name) + 1 : 0, h);
    h = mi_hash64(&v[i].i, sizeof v[i].i, h);
    h = mi_hash64(&v[i].f, sizeof v[i].f, h);
  }
  return h ? h : 1;
}

int32_t mi__space_ask_check(const mi_space_t *s, const char *vid, const mi_knob_value_t *vals,
                            int32_t n, mi_error_t *why) {
  const mi_plugin_t *p = s->plugin;
  struct mi__space_asks *a = s->asks;
  uint64_t key;
  ask_t *at = NULL;
  mi_error_t e;
  int32_t status;
  if (!p->api.check_config) return MI_OK;
  if (a) {
    key = ask_key(vid, vals, n);
    for (uint32_t i = (uint32_t)(key % ASK_SLOTS);; i = (i + 1) % ASK_SLOTS)
      if (a->slot[i].key == key || a->slot[i].key == 0) {
        at = &a->slot[i];
        break;
      }
    if (at->key == key) {
      *why = at->why;
      return at->status;
    }
  }
  /* Without the workers (none given, or gone after the tuning: mi_space_detach_pool) the plugin
   * in this process answers; a stand-in refuses, so an unasked point is never taken as valid. */
  if (!s->opts.probe_pool) return p->api.check_config(p->ctx, s->device, vid, vals, n, why);
  /* A device quarantined by its measurements is not asked: the point goes on to be refused by
   * the quarantine with its own reason, and the question is not recorded as failed. */
  if (mi_worker_quarantined(s->opts.probe_pool, s->opts.probe_spec)) return MI_OK;
  mi_error_clear(&e);
  if (mi_worker_check_config(s->opts.probe_pool, s->opts.probe_spec, vid, vals, n, &status, why,
                             &e) != MI_OK) {
    /* Stopped by the caller's time budget: the point is refused for now, but the question is
     * neither a plugin failure nor an answer to keep. */
    if (e.code == MI_ERR_TIMEOUT && mi_worker_pool_out_of_time(s->opts.probe_pool))
      return mi_errorf(why, MI_ERR_INVALID_CONFIG, "not asked: the time budget ran out");
    /* Kept like an answer: asking again would only crash or hang the worker again. */
    status = mi_errorf(why, MI_ERR_INVALID_CONFIG, "check_config failed in the worker: %s",
                       e.message);
    if (a && !a->failed[0]) snprintf(a->failed, sizeof a->failed, "%s", why->message);
  }
  if (at) {
    if (a->n >= ASK_SLOTS / 2) {
      memset(a->slot, 0, ASK_SLOTS * sizeof *a->slot);
      a->n = 0;
      at = &a->slot[key % ASK_SLOTS];
    }
    at->key = key;
    at->status = status;
    at->why = *why;
    a->n++;
  }
  return status;
}
