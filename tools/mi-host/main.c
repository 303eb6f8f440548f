/* main.c - mi-host: global options, the command table, and where plugins are looked for. */
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mi_host.h"

typedef struct command {
  const char *name;
  const char *help;
  const char *usage;
  int (*run)(mi_host_t *h, int argc, char **argv);
} command_t;

static const command_t k_commands[] = {
#define MI_HOST_COMMAND(name, help, usage) {#name, help, usage, mi_host_cmd_##name},
#include "commands.def"
#undef MI_HOST_COMMAND
};

/* The global options; the commands' own are in their files. */
enum { O_PLUGINS = 256,
       O_JSON };
static const mi_cli_opt_t k_global[] = {
    {"plugins", O_PLUGINS, "DIR",
     "load plugins from DIR (repeatable); default: MI_PLUGIN_PATH,\n"
     "else the plugins folder of this build or installation"},
    {"json", O_JSON, NULL, "print one JSON object instead of text"},
    {NULL, 0, NULL, NULL},
};

static const char *k_usage =
    "mi-host [--plugins DIR]... [--json] COMMAND [ARGS]\n"
    "mi-host help COMMAND";

/* The command list, after the options, in the help. */
static const char *footer(char *buf, size_t cap) {
  size_t at = (size_t)snprintf(buf, cap, "commands:\n");
  for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0] && at < cap; i++)
    at += (size_t)snprintf(buf + at, cap - at, "  %-14s  %s\n", k_commands[i].name,
                           k_commands[i].help);
  if (at < cap)
    snprintf(buf + at, cap - at,
             "  %-14s  %s\n\n"
             "environment: MI_PLUGIN_PATH (colon-separated plugin folders), MI_LOADER_DEBUG=1\n"
             "(trace plugin loading to stderr)",
             "help COMMAND", "a command's options (also: mi-host COMMAND --help)");
  return buf;
}

static void cli_global(mi_cli_t *c, char *foot, size_t cap) {
  memset(c, 0, sizeof *c);
  c->prog = "mi-host";
  c->usage = k_usage;
  c->about = "Meta Infer host: loads device plugins and works with them.";
  c->opts = k_global;
  c->footer = footer(foot, cap);
  c->flags = MI_CLI_VERSION_OPT | MI_CLI_STOP_AT_ARG;
}

void mi_host_cli_begin(mi_host_t *h, mi_cli_t *c, const char *command, const mi_cli_opt_t *opts,
                       const char *footer, int argc, char **argv) {
  mi_host_cli(h, c, command, opts);
  c->flags |= MI_CLI_NO_ARGS;
  c->footer = footer;
  mi_cli_begin(c, argc, argv);
}

int mi_host_cli_next(mi_cli_t *c, int *status) {
  int st, k = mi_cli_step(c, &st);
  *status = st == MI_CLI_GO_ON ? MI_HOST_OK : st == 0 ? MI_HOST_DONE
                                                      : MI_HOST_USAGE;
  return k;
}

void mi_host_cli(mi_host_t *h, mi_cli_t *c, const char *command, const mi_cli_opt_t *opts) {
  memset(c, 0, sizeof *c);
  snprintf(h->cli_prog, sizeof h->cli_prog, "mi-host %s", command);
  c->prog = h->cli_prog;
  c->opts = opts;
  for (size_t i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
    if (strcmp(k_commands[i].name, command) == 0) {
      snprintf(h->cli_usage, sizeof h->cli_usage, "mi-host [--plugins DIR]... [--json] %s",
               k_commands[i].usage);
      c->usage = h->cli_usage;
      c->about = k_commands[i].help;
    }
}

/* The command named `name`, or NULL after "unknown command" (with the likeliest one). */
static const command_t *find_command(const char *name) {
  const char *names[sizeof k_commands / sizeof k_commands[0] + 1], *hit;
  size_t n = sizeof k_commands / sizeof k_commands[0];
  for (size_t c = 0; c < n; c++) {
    if (strcmp(name, k_commands[c].name) == 0) return &k_commands[c];
    names[c] = k_commands[c].name;
  }
  names[n] = "help";
  if ((hit = mi_cli_suggest(name, names, n + 1)))
    mi_host_usage_error("unknown command '%s'; did you mean '%s'?", name, hit);
  else
    mi_host_usage_error("unknown command '%s'", name);
  return NULL;
}

int mi_host_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("mi-host: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs(" (see mi-host --help)\n", stderr);
  va_end(ap);
  return MI_HOST_USAGE;
}

int32_t mi_host_fixed_inputs(const char *const *args, int n, char *out, size_t cap, mi_error_t *err) {
  size_t at = 0;
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    const char *eq = strchr(args[i], '=');
    char *abs = eq ? realpath(eq + 1, NULL) : NULL;
    if (!abs || strchr(args[i], ';')) {
      free(abs);
      return mi_errorf(err, MI_ERR_IO, "--input '%s': cannot resolve the file", args[i]);
    }
    at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, "%s%.*s=%s", i ? ";" : "",
                           (int)(eq - args[i]), args[i], abs);
    free(abs);
  }
  if (at >= cap) return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--input: too many files");
  return MI_OK;
}

int32_t mi_host_inputs_text(const mi_graph_t *g, const char *const *values, int nvalue, char *out, size_t cap,
                            mi_error_t *err) {
  size_t at = 0;
  out[0] = '\0';
  for (int32_t i = 0; i < g->input_count; i++) {
    const mi_tensor_t *t = &g->tensors[g->inputs[i]];
    at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, "%s%s:", i ? ";" : "", t->name);
    for (int32_t d = 0; d < t->rank; d++)
      at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, d ? "x%lld" : "%lld", (long long)t->dims[d]);
  }
  for (int i = 0; i < nvalue; i++) {
    size_t n = strcspn(values[i], "=");
    at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, "%s%.*s={%s}", at ? ";" : "", (int)n, values[i],
                           values[i][n] ? values[i] + n + 1 : "");
  }
  if (at >= cap)
    return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--shape/--input: the model's %d input shapes take over %zu bytes",
                     (int)g->input_count, cap - 1);
  return MI_OK;
}

int mi_host_check_fallback(mi_host_t *h, const char *command, const char *spec) {
  mi_registry_t *reg;
  mi_plugin_t *p = NULL;
  uint32_t dev = 0;
  mi_error_t err;
  if (!spec || !strcmp(spec, "ref")) return 0;
  h->described_only = 1;
  if (!(reg = mi_host_registry(h))) return 1;
  mi_error_clear(&err);
  if (mi_registry_device(reg, spec, &p, &dev, &err) == MI_OK) return 0;
  fprintf(stderr, "mi-host: %s: --fallback '%s': %s\n", command, spec, err.message);
  return 1;
}

const char *mi_host_plugin_path(mi_host_t *h) {
  char given[8192] = "";
  size_t at = 0;
  if (h->plugin_path) return h->plugin_path;
  for (int i = 0; i < h->plugin_dir_count && at < sizeof given; i++)
    at += (size_t)snprintf(given + at, sizeof given - at, "%s%s", i ? ":" : "", h->plugin_dirs[i]);
  if (at >= sizeof given) {
    fputs("mi-host: --plugins folders too long\n", stderr);
    return NULL;
  }
  if (!(h->plugin_path = mi_plugin_path(given))) fputs("mi-host: out of memory\n", stderr);
  return h->plugin_path;
}

mi_registry_t *mi_host_registry(mi_host_t *h) {
  mi_error_t err;
  const char *path;
  if (h->registry) return h->registry;
  if (!(path = mi_host_plugin_path(h))) return NULL;
  h->registry = mi_registry_create();
  if (!h->registry) {
    fputs("mi-host: out of memory\n", stderr);
    return NULL;
  }
  /* Each plugin is loaded once in a sacrificial worker first: one that crashes, hangs or
   * prints to stdout while loading is refused with the reason instead (docs/security.md). */
  if (h->described_only) mi_registry_set_isolated(h->registry, mi_worker_describe, NULL);
  else
    mi_registry_set_preflight(h->registry, mi_worker_preflight, NULL);
  mi_error_clear(&err);
  if (mi_registry_scan_path(h->registry, path, &err) != MI_OK) {
    fprintf(stderr, "mi-host: %s\n", err.message);
    mi_registry_destroy(h->registry);
    h->registry = NULL;
  }
  return h->registry;
}

int main(int argc, char **argv) {
  mi_host_t h;
  mi_cli_t c;
  char foot[4096];
  const command_t *cmd;
  int k, rc, at;

  memset(&h, 0, sizeof h);
  h.argv0 = argv[0];
  cli_global(&c, foot, sizeof foot);
  mi_cli_begin(&c, argc, argv);
  while ((k = mi_cli_next(&c)) != MI_CLI_ARG) {
    switch (k) {
    case MI_CLI_END: mi_cli_help(&c, stderr); return MI_HOST_USAGE;
    case MI_CLI_EXIT: return MI_HOST_OK;
    case MI_CLI_ERROR: return MI_HOST_USAGE;
    case O_JSON: h.json = 1; break;
    case O_PLUGINS:
      if (!c.value[0]) return mi_host_usage_error("--plugins needs a directory");
      if (h.plugin_dir_count == MI_HOST_MAX_DIRS)
        return mi_host_usage_error("at most %d --plugins directories", MI_HOST_MAX_DIRS);
      h.plugin_dirs[h.plugin_dir_count++] = c.value;
      break;
    }
  }
  at = c.rest - 1; /* the command */
  if (strcmp(argv[at], "help") == 0) {
    /* `mi-host help COMMAND` is `mi-host COMMAND --help` */
    static char help_opt[] = "--help";
    char *args[3];
    if (at + 1 >= argc) {
      mi_cli_help(&c, stdout);
      return MI_HOST_OK;
    }
    if (!(cmd = find_command(argv[at + 1]))) return MI_HOST_USAGE;
    args[0] = argv[at + 1];
    args[1] = help_opt;
    args[2] = NULL;
    return cmd->run(&h, 2, args);
  }
  if (!(cmd = find_command(argv[at]))) return MI_HOST_USAGE;
  rc = cmd->run(&h, argc - at, argv + at);
  mi_registry_destroy(h.registry);
  free(h.plugin_path);
  return rc;
}
