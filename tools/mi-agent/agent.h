/* agent.h - what mi-agent's files share: the configuration texts of a job turned back into
 * session options and a transform configuration, and the commands. */
#ifndef MI_AGENT_H
#define MI_AGENT_H

#include "metainfer/mi.h"
#include "metainfer/mi_farm.h"
#include "metainfer/mi_measure.h"
#include "metainfer/mi_transform.h"

/** Session options parsed from mi_config_canonical text; owns its strings. */
typedef struct mi_agent_so {
  mi_session_options_t so;
  mi_knob_value_t *knobs; /* every knob, device ones first */
  mi_node_choice_t *choices;
  char *text; /* a copy of the text the names point into */
} mi_agent_so_t;

/** Parses `text` ("default" or "device{k=v,...};NODE:VARIANT{k=v,...}..."); knobs the plugin
 * declares FLOAT get f, others i. The result re-canonicalises to `text` or it is refused. */
int32_t mi_agent_so_parse(const char *text, const mi_plugin_t *p, uint32_t dev, mi_agent_so_t *out,
                          mi_error_t *err);
void mi_agent_so_free(mi_agent_so_t *s);
/** Parses mi_xf_config_canonical text; the result re-canonicalises to `text` or it is refused. */
int32_t mi_agent_xf_parse(const char *text, mi_xf_config_t **out, mi_error_t *err);

/** Options every command shares. */
typedef struct mi_agent_args {
  const char *db, *plugins, *name, *cache, *model, *device, *inputs, *knob;
  const char *fallback; /* --fallback: 'ref' or PLUGIN:INDEX; NULL: the default (mi-run's) */
  const char *env[8];
  int32_t env_count;
  double lease_s, exit_idle_s, timeout_s;
  int32_t count, repeats, wait, fingerprint;
} mi_agent_args_t;

int mi_agent_run(const mi_agent_args_t *a);    /* agent_run.c */
int mi_agent_submit(const mi_agent_args_t *a); /* agent_submit.c */

#endif
