/* main.c - mi-host: global options, the command table, and where plugins are looked for. */
/* secure_getenv is a GNU extension. */
#define _GNU_SOURCE 1
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

static void print_help(FILE *f) {
  size_t i;
  fputs("usage: mi-host [--plugins DIR]... [--json] COMMAND [ARGS]\n\n"
        "Meta Infer host: loads device plugins and works with them.\n\n"
        "options:\n"
        "  --plugins DIR   load plugins from DIR (repeatable); default: MI_PLUGIN_PATH,\n"
        "                  else the plugins folder next to this program's bin folder\n"
        "  --json          print one JSON object instead of text\n"
        "  -h, --help      show this help\n\n"
        "commands:\n",
        f);
  for (i = 0; i < sizeof k_commands / sizeof k_commands[0]; i++)
    fprintf(f, "  %-14s  %s\n", k_commands[i].name, k_commands[i].help);
  fputs("\nenvironment: MI_PLUGIN_PATH (colon-separated plugin folders), MI_LOADER_DEBUG=1\n"
        "(trace plugin loading to stderr)\n",
        f);
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

/* <dir of the executable>/../plugins, so `build/bin/mi-host plugins` finds build/plugins. */
static int default_plugin_dir(char *out, size_t cap) {
  char exe[PATH_MAX];
  char *slash;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return 0;
  exe[n] = '\0';
  slash = strrchr(exe, '/');
  if (!slash) return 0;
  *slash = '\0';
  return (size_t)snprintf(out, cap, "%s/../plugins", exe) < cap;
}

mi_registry_t *mi_host_registry(mi_host_t *h) {
  mi_error_t err;
  int i;
  if (h->registry) return h->registry;
  h->registry = mi_registry_create();
  if (!h->registry) {
    fputs("mi-host: out of memory\n", stderr);
    return NULL;
  }
  mi_error_clear(&err);
  if (h->plugin_dir_count > 0) {
    for (i = 0; i < h->plugin_dir_count; i++) {
      if (mi_registry_scan(h->registry, h->plugin_dirs[i], &err) != MI_OK) {
        fprintf(stderr, "mi-host: %s\n", err.message);
        mi_registry_destroy(h->registry);
        h->registry = NULL;
        return NULL;
      }
    }
  } else if (secure_getenv("MI_PLUGIN_PATH")) {
    if (mi_registry_scan_env(h->registry, &err) != MI_OK) {
      fprintf(stderr, "mi-host: %s\n", err.message);
      mi_registry_destroy(h->registry);
      h->registry = NULL;
      return NULL;
    }
  } else {
    char dir[PATH_MAX];
    /* The default folder may legitimately not exist (no plugins built): an empty list. */
    if (default_plugin_dir(dir, sizeof dir) && access(dir, F_OK) == 0 &&
        mi_registry_scan(h->registry, dir, &err) != MI_OK)
      fprintf(stderr, "mi-host: %s\n", err.message);
  }
  return h->registry;
}

int main(int argc, char **argv) {
  mi_host_t h;
  int i, rc;
  size_t c;

  memset(&h, 0, sizeof h);
  h.argv0 = argv[0];
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      print_help(stdout);
      return MI_HOST_OK;
    } else if (strcmp(a, "--json") == 0) {
      h.json = 1;
    } else if (strcmp(a, "--plugins") == 0 || strncmp(a, "--plugins=", 10) == 0) {
      const char *dir = a[9] == '=' ? a + 10 : (i + 1 < argc ? argv[++i] : NULL);
      if (!dir || !dir[0]) return mi_host_usage_error("--plugins needs a directory");
      if (h.plugin_dir_count == MI_HOST_MAX_DIRS)
        return mi_host_usage_error("at most %d --plugins directories", MI_HOST_MAX_DIRS);
      h.plugin_dirs[h.plugin_dir_count++] = dir;
    } else if (a[0] == '-') {
      return mi_host_usage_error("unknown option '%s'", a);
    } else {
      break;
    }
  }
  if (i == argc) {
    print_help(stderr);
    return MI_HOST_USAGE;
  }
  for (c = 0; c < sizeof k_commands / sizeof k_commands[0]; c++)
    if (strcmp(argv[i], k_commands[c].name) == 0) break;
  if (c == sizeof k_commands / sizeof k_commands[0])
    return mi_host_usage_error("unknown command '%s'", argv[i]);
  /* `mi-host COMMAND --help` is answered here, the same way for every command. */
  for (int k = i + 1; k < argc; k++) {
    if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
      printf("usage: mi-host [--plugins DIR]... [--json] %s\n\n%s\n", k_commands[c].usage,
             k_commands[c].help);
      return MI_HOST_OK;
    }
  }
  rc = k_commands[c].run(&h, argc - i, argv + i);
  mi_registry_destroy(h.registry);
  return rc;
}
