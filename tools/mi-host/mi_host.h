/* mi_host.h - what mi-host's commands share: options, the lazily loaded registry, JSON output. */
#ifndef MI_HOST_H
#define MI_HOST_H

#include <stdio.h>

#include "metainfer/mi.h"
#include "mi_cli.h"

/** Exit codes: 0 done, 1 the work failed, 2 the command line was wrong. MI_HOST_DONE, from a
 * command's parser only: --help was printed, exit 0. */
enum { MI_HOST_DONE = -1,
       MI_HOST_OK = 0,
       MI_HOST_FAIL = 1,
       MI_HOST_USAGE = 2 };

#define MI_HOST_MAX_DIRS 32
/* --shape/--input options one command takes, and the texts that carry them to the workers: one
 * per model input, and a merged transformer decoder has 27 (every past key and value). */
#define MI_HOST_MAX_INPUT_ARGS 256
#define MI_HOST_INPUTS_TEXT 16384 /* "NAME:D0xD1;..." of every input */
#define MI_HOST_FIXED_TEXT 65536  /* "NAME=/ABS/FILE.npy;..." of the --input files */

/** Global state of one mi-host run. */
typedef struct mi_host {
  const char *argv0;
  const char *plugin_dirs[MI_HOST_MAX_DIRS]; /* --plugins, in order */
  int plugin_dir_count;
  int json;                           /* --json */
  mi_registry_t *registry;            /* loaded on first use */
  char cli_prog[64], cli_usage[1024]; /* the running command's, for its messages */
  char *plugin_path;                  /* mi_plugin_path's answer, on first use */
  int described_only;                 /* set before mi_host_registry: stand-ins only */
} mi_host_t;

/** Loads plugins from --plugins, else MI_PLUGIN_PATH, else <exe dir>/../plugins. Prints the
 * reason and returns NULL when a directory named on the command line cannot be read. With
 * h->described_only, each plugin is described in a sacrificial worker instead and the registry
 * holds stand-ins (mi_registry_set_isolated): no plugin code runs in this process. */
mi_registry_t *mi_host_registry(mi_host_t *h);
/** The plugin folders (colon-separated) that the registry and every worker this run starts
 * load from: mi_plugin_path of the --plugins folders. NULL when out of memory. */
const char *mi_host_plugin_path(mi_host_t *h);

/** Checks a command's --fallback DEV before any worker starts: NULL and "ref" pass; a
 * PLUGIN:INDEX that no plugin of the path describes prints one line ("mi-host COMMAND: ...") and
 * returns nonzero. The plugins are described in a sacrificial worker (described_only). */
int mi_host_check_fallback(mi_host_t *h, const char *command, const char *spec);

/** Sets up `c` to parse the arguments of `command` (argv[0] is its name) with its options
 * `opts`: messages start "mi-host COMMAND:", and its --help shows its line of commands.def. */
void mi_host_cli(mi_host_t *h, mi_cli_t *c, const char *command, const mi_cli_opt_t *opts);

/** mi_host_cli for a command that takes options only (a positional argument is an error), with
 * `footer` (may be NULL) under its help, then starts parsing argv. */
void mi_host_cli_begin(mi_host_t *h, mi_cli_t *c, const char *command, const mi_cli_opt_t *opts,
                       const char *footer, int argc, char **argv);
/** The next option's key (its value in c->value), or 0 once the parse is over, with *status
 * saying how it ended: MI_HOST_OK at the end of the line, MI_HOST_DONE after --help was
 * printed, MI_HOST_USAGE after a message. */
int mi_host_cli_next(mi_cli_t *c, int *status);

/** The --input NAME=FILE.npy arguments as the workers take them (mi_worker_config_t's
 * fixed_inputs): "NAME=/ABS/FILE.npy;...", each file resolved to its absolute path since the
 * workers may run elsewhere in the tree. An unresolvable file or a text over `cap` is an error. */
int32_t mi_host_fixed_inputs(const char *const *args, int n, char *out, size_t cap, mi_error_t *err);

/** Every input's shape as the workers take it (mi_worker_config_t's inputs): "NAME:D0xD1;...",
 * then the --value arguments "NAME=V0,V1" as "NAME={V0,V1}" (the inputs the workers fix).
 * A text over `cap` is an error, never a cut one. */
int32_t mi_host_inputs_text(const mi_graph_t *g, const char *const *values, int nvalue, char *out, size_t cap,
                            mi_error_t *err);

/** Prints "mi-host: <message>" to stderr and returns MI_HOST_USAGE. */
int mi_host_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Every command, declared from the table. */
#define MI_HOST_COMMAND(name, help, usage) int mi_host_cmd_##name(mi_host_t *h, int argc, char **argv);
#include "commands.def"
#undef MI_HOST_COMMAND

/* ---------------------------------------------------------------- JSON output (json.c) */

/** Writes `s` as a JSON string literal (quotes included). NULL writes null. */
void mi_json_string(FILE *f, const char *s);
/** Writes a number; non-finite values become null (JSON has no NaN). */
void mi_json_double(FILE *f, double v);
/** Writes `"key":` with a leading comma unless `*first`; clears *first. */
void mi_json_key(FILE *f, int *first, const char *key);
/** Length of the valid UTF-8 sequence at p, or 0 when it is not one (the JSON and the HTML
 * writers pass valid text through and escape or replace the rest). */
int mi_host_utf8_len(const unsigned char *p);

#endif
