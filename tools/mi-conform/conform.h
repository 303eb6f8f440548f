/* conform.h - shared types of mi-conform: the rule table and the per-rule context. */
#ifndef MI_CONFORM_H
#define MI_CONFORM_H

#include <stddef.h>
#include <stdint.h>

#include "metainfer/mi.h"

enum { CONFORM_PASS = 0,
       CONFORM_FAIL = 1,
       CONFORM_SKIP = 2 };

/** What a rule sees: the plugin library, loaded and negotiated in this (child) process. */
typedef struct conform_ctx {
  const char *name;         /* plugin name from its manifest */
  const char *so_path;      /* the .so the manifest names */
  const char *manifest;     /* the manifest's path */
  void *dl;                 /* dlopen handle; NULL when loading failed */
  mi_plugin_entry_fn entry; /* NULL when the symbol is missing */
  mi_plugin_t plugin;       /* negotiated table + instance, when `loaded` */
  int loaded;               /* 1 when entry, negotiation and create succeeded */
  char load_error[MI_ERROR_MESSAGE_SIZE + 64];
  mi_host_api_t host; /* the services given to the plugin */
  void *host_entry;   /* the host's handle behind host.host_ctx (plugin/plugin.h) */
  int quiet_log;      /* 1: the plugin's log calls are dropped instead of printed */
  /* 1 while a rule needs each kernel's own time: its sessions run kernels synchronously
   * (mi_session_options_t.per_node_timing); else they enqueue when the plugin can (ABI 1.3) */
  int per_node_timing;
} conform_ctx_t;

/** A rule returns CONFORM_PASS/FAIL/SKIP and writes its reason (one line) into `why`. */
typedef int (*conform_rule_fn)(conform_ctx_t *c, char *why, size_t why_size);

/** A rule's result with its reason: writes the printf-formatted reason into why (n bytes) and
 * returns `verdict` (CONFORM_PASS, CONFORM_FAIL or CONFORM_SKIP). */
int conform_verdict(char *why, size_t n, int verdict, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/** The end of a rule that checked `checked` things and found nothing wrong: CONFORM_SKIP with
 * `none` (why nothing could be checked) when there were none, else CONFORM_PASS with the
 * printf-formatted reason. */
int conform_checked(char *why, size_t n, int checked, const char *none, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

typedef struct conform_rule {
  int number;
  const char *id;    /* short stable id, e.g. "exports" */
  const char *title; /* what it checks, one line */
  conform_rule_fn run;
  int needs_load;     /* 1: skipped when the plugin does not load */
  int no_plugin_code; /* 1: runs no plugin code itself (only the host's loader, in its
                       * worker), so it runs even when the load policy refuses the plugin */
} conform_rule_t;

/** The rules, in number order, and their count. */
extern const conform_rule_t conform_rules[];
extern const int conform_rule_count;

/* Rules, one per function, grouped by file. */
int conform_rule_exports(conform_ctx_t *c, char *why, size_t n);       /* rules_abi.c */
int conform_rule_negotiation(conform_ctx_t *c, char *why, size_t n);   /* rules_abi.c */
int conform_rule_struct_sizes(conform_ctx_t *c, char *why, size_t n);  /* rules_abi.c */
int conform_rule_device_index(conform_ctx_t *c, char *why, size_t n);  /* rules_abi.c */
int conform_rule_descriptors(conform_ctx_t *c, char *why, size_t n);   /* rules_desc.c */
int conform_rule_invalid_knobs(conform_ctx_t *c, char *why, size_t n); /* rules_desc.c */
int conform_rule_reference(conform_ctx_t *c, char *why, size_t n);     /* rules_exec.c */
int conform_rule_counters(conform_ctx_t *c, char *why, size_t n);      /* rules_exec.c */
int conform_rule_buffers(conform_ctx_t *c, char *why, size_t n);       /* rules_exec.c */
int conform_rule_error_paths(conform_ctx_t *c, char *why, size_t n);   /* rules_exec.c */
int conform_rule_lifecycle(conform_ctx_t *c, char *why, size_t n);     /* rules_life.c */
int conform_rule_host_load(conform_ctx_t *c, char *why, size_t n);     /* rules_host.c */
int conform_rule_stdout(conform_ctx_t *c, char *why, size_t n);        /* rules_hygiene.c */
int conform_rule_host_handles(conform_ctx_t *c, char *why, size_t n);  /* rules_hygiene.c */
int conform_rule_run_times(conform_ctx_t *c, char *why, size_t n);     /* rules_hygiene.c */
int conform_rule_manifest(conform_ctx_t *c, char *why, size_t n);      /* rules_host.c */

/** Loads c->so_path into c (dlopen, entry, negotiate with `major`/`minor`, create).
 * Fills c->load_error and returns an mi status on failure. */
int32_t conform_load(conform_ctx_t *c, uint32_t major, uint32_t minor);
/** Destroys the plugin instance (if any) and creates a new one in the loaded library. */
int32_t conform_recreate(conform_ctx_t *c);
/** Destroys the instance and unloads the library. */
void conform_unload(conform_ctx_t *c);

/** Builds a one-node test graph for `op_type`, case `index` (0..). Returns NULL when the op
 * has no more cases (or none at all). Shapes are inferred and the graph sorted. */
mi_graph_t *conform_case_graph(const char *op_type, int index, uint64_t seed);

#endif
