/* main.c - mi-conform: runs the numbered conformance rules against plugins, each rule in its
 * own child process so a plugin that crashes or hangs fails that rule and nothing else. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"
#include "mi_cli.h"

const conform_rule_t conform_rules[] = {
    {1, "exports", "only the entry symbol is exported", conform_rule_exports, 0, 0},
    {2, "negotiation", "negotiates with older and newer hosts, refuses another major",
     conform_rule_negotiation, 0, 0},
    {3, "struct-sizes", "honours the caller's struct sizes (smaller and larger, canaries intact)",
     conform_rule_struct_sizes, 1, 0},
    {4, "device-index", "refuses out-of-range devices; zero devices is not a crash",
     conform_rule_device_index, 1, 0},
    {5, "descriptors", "descriptions are valid (unique names, domains, defaults, constraints)",
     conform_rule_descriptors, 1, 0},
    {6, "invalid-knobs", "invalid knob values and combinations are refused with a reason",
     conform_rule_invalid_knobs, 1, 0},
    {7, "reference", "every variant matches the reference interpreter over sampled knobs/shapes",
     conform_rule_reference, 1, 0},
    {8, "counters", "counters are monotonic, non-negative, in their declared units",
     conform_rule_counters, 1, 0},
    {9, "buffers", "buffers round-trip exactly; out-of-range access is refused",
     conform_rule_buffers, 1, 0},
    {10, "error-paths", "bad calls return errors with messages and never abort",
     conform_rule_error_paths, 1, 0},
    {11, "lifecycle", "repeated load, use and unload does not leak", conform_rule_lifecycle, 1, 0},
    {12, "host-load",
     "mi-host loads it: its load policy, then isolation (no crash, hang, exit, "
     "stdout or forged handle)",
     conform_rule_host_load, 0, 1},
    {13, "stdout", "never writes to stdout or stderr (logs through the host), at any entry point",
     conform_rule_stdout, 0, 0},
    {14, "host-handles", "calls host services only with the handle it was given",
     conform_rule_host_handles, 0, 0},
    {15, "run-times", "device times reported at run time are plausible against the wall clock",
     conform_rule_run_times, 1, 0},
    {16, "manifest",
     "the manifest and its library pass the host's load policy; the library "
     "stays in the plugin's folder",
     conform_rule_manifest, 0, 1},
};
const int conform_rule_count = (int)(sizeof conform_rules / sizeof conform_rules[0]);

typedef struct result {
  int status;
  char why[512];
  double seconds;
} result_t;

static const char *k_status_names[] = {"pass", "fail", "skip"};

/* Runs one rule in a child; the child writes "<status>\t<reason>" into a pipe. */
static void run_rule(const char *name, const char *so_path, const char *manifest,
                     const conform_rule_t *rule, int timeout_s, result_t *res) {
  int fds[2];
  pid_t pid;
  struct timespec t0, t1;
  char buf[600];
  size_t got = 0;
  int wstatus = 0, timed_out = 0;

  clock_gettime(CLOCK_MONOTONIC, &t0);
  res->status = CONFORM_FAIL;
  res->why[0] = '\0';
  if (pipe(fds) != 0) {
    snprintf(res->why, sizeof res->why, "pipe: %s", strerror(errno));
    return;
  }
  fflush(stdout);
  fflush(stderr);
  pid = fork();
  if (pid < 0) {
    snprintf(res->why, sizeof res->why, "fork: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {
    conform_ctx_t c;
    char why[512] = "";
    int st, len;
    close(fds[0]);
    /* A plugin must never write to stdout; keep the report clean even when one does. */
    if (!freopen("/dev/null", "w", stdout)) _exit(3);
    memset(&c, 0, sizeof c);
    c.name = name;
    c.so_path = so_path;
    c.manifest = manifest;
    if (rule->needs_load && conform_load(&c, MI_ABI_VERSION_MAJOR, MI_ABI_VERSION_MINOR) != MI_OK) {
      st = CONFORM_SKIP;
      snprintf(why, sizeof why, "plugin does not load: %s", c.load_error);
    } else {
      st = rule->run(&c, why, sizeof why);
    }
    conform_unload(&c);
    len = snprintf(buf, sizeof buf, "%d\t%s", st, why);
    if (write(fds[1], buf, (size_t)(len < (int)sizeof buf ? len : (int)sizeof buf - 1)) < 0) _exit(4);
    _exit(0);
  }
  close(fds[1]);
  for (;;) {
    struct pollfd p = {fds[0], POLLIN, 0};
    double elapsed;
    int r;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    elapsed = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (elapsed >= timeout_s) {
      timed_out = 1;
      kill(pid, SIGKILL);
      break;
    }
    r = poll(&p, 1, 200);
    if (r > 0) {
      ssize_t n = read(fds[0], buf + got, sizeof buf - 1 - got);
      if (n <= 0) break;
      got += (size_t)n;
      if (got >= sizeof buf - 1) break;
    } else if (r < 0 && errno != EINTR) {
      break;
    }
  }
  close(fds[0]);
  waitpid(pid, &wstatus, 0);
  buf[got] = '\0';
  clock_gettime(CLOCK_MONOTONIC, &t1);
  res->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  if (timed_out) {
    snprintf(res->why, sizeof res->why, "timed out after %d s (the plugin hangs)", timeout_s);
  } else if (WIFSIGNALED(wstatus)) {
    snprintf(res->why, sizeof res->why, "the plugin crashed the process (signal %d, %s)",
             WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
  } else if (got == 0 || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    snprintf(res->why, sizeof res->why, "the plugin ended the process (exit status %d)",
             WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
  } else {
    char *tab = strchr(buf, '\t');
    res->status = (int)strtol(buf, NULL, 10);
    if (res->status < CONFORM_PASS || res->status > CONFORM_SKIP) res->status = CONFORM_FAIL;
    snprintf(res->why, sizeof res->why, "%s", tab ? tab + 1 : "");
  }
}

static void json_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') printf("\\%c", ch);
    else if (ch < 0x20)
      printf("\\u%04x", ch);
    else
      putchar(ch);
  }
  putchar('"');
}

typedef struct options {
  const char *dir;
  const char *only_plugin;
  int rules[64];
  int rule_filter_count;
  int json;
  int timeout_s;
} options_t;

static int rule_selected(const options_t *o, int number) {
  if (o->rule_filter_count == 0) return 1;
  for (int i = 0; i < o->rule_filter_count; i++)
    if (o->rules[i] == number) return 1;
  return 0;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs the selected rules on one manifest; prints as it goes; returns the number of fails. */
static int conform_plugin(const options_t *o, const char *manifest_path, int *first_json) {
  mi_manifest_t m = {0};
  mi_error_t err, policy;
  char so_path[PATH_MAX], dir[PATH_MAX];
  int fails = 0, passes = 0, skips = 0;
  const char *slash;
  int refused;

  if (mi_manifest_load(manifest_path, &m, &err) != MI_OK) {
    fprintf(stderr, "mi-conform: %s\n", err.message);
    return 1;
  }
  if (o->only_plugin && strcmp(o->only_plugin, m.name) != 0) {
    mi_manifest_clear(&m);
    return -1;
  }
  /* The host's load policy decides before any plugin code runs: a library the host would not
   * open (escaping its folder, writable by others, another ABI major) is not opened here either;
   * R16 says why and R12 shows the host's refusal. */
  mi_error_clear(&policy);
  refused = mi_manifest_check_files(manifest_path, &m, NULL, &policy) != MI_OK;
  slash = strrchr(manifest_path, '/');
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - manifest_path) : 1,
           slash ? manifest_path : ".");
  if (snprintf(so_path, sizeof so_path, "%s/%s", dir, m.library) >= (int)sizeof so_path) {
    fprintf(stderr, "mi-conform: %s: library path too long\n", manifest_path);
    mi_manifest_clear(&m);
    return 1;
  }

  if (o->json) {
    printf("%s{\"plugin\":", *first_json ? "" : ",");
    json_string(m.name);
    printf(",\"library\":");
    json_string(so_path);
    printf(",\"rules\":[");
    *first_json = 0;
  } else {
    printf("plugin %s (%s)\n", m.name, so_path);
  }
  int first_rule = 1;
  for (int i = 0; i < conform_rule_count; i++) {
    const conform_rule_t *r = &conform_rules[i];
    result_t res;
    if (!rule_selected(o, r->number)) continue;
    if (refused && !r->no_plugin_code) {
      res.status = CONFORM_SKIP;
      res.seconds = 0;
      snprintf(res.why, sizeof res.why, "not opened, the host's load policy refuses it (R16): %.400s",
               policy.message);
    } else {
      run_rule(m.name, so_path, manifest_path, r, o->timeout_s, &res);
    }
    if (res.status == CONFORM_FAIL) fails++;
    else if (res.status == CONFORM_PASS)
      passes++;
    else
      skips++;
    if (o->json) {
      printf("%s{\"rule\":%d,\"id\":", first_rule ? "" : ",", r->number);
      json_string(r->id);
      printf(",\"status\":\"%s\",\"reason\":", k_status_names[res.status]);
      json_string(res.why);
      printf(",\"seconds\":%.3f}", res.seconds);
    } else {
      printf("  %-4s R%-2d %-14s %s%s%s\n", k_status_names[res.status], r->number, r->id,
             r->title, res.why[0] ? ": " : "", res.why);
    }
    fflush(stdout);
    first_rule = 0;
  }
  if (o->json)
    printf("],\"passed\":%d,\"failed\":%d,\"skipped\":%d}", passes, fails, skips);
  else
    printf("  summary: %d passed, %d failed, %d skipped\n", passes, fails, skips);
  mi_manifest_clear(&m);
  return fails;
}

/* R11 reads the heap with mallinfo2, which counts chunks parked in glibc's per-thread caches
 * as in use; memory a driver frees on another thread sits there and looks like a leak. Run with
 * those caches off (a tunable read only at start-up, hence the re-exec). */
static void reexec_without_tcache(char **argv) {
  const char *old = getenv("GLIBC_TUNABLES");
  char value[512];
  if (getenv("MI_CONFORM_REEXEC")) return;
  snprintf(value, sizeof value, "%s%sglibc.malloc.tcache_count=0", old ? old : "", old ? ":" : "");
  if (setenv("GLIBC_TUNABLES", value, 1) != 0 || setenv("MI_CONFORM_REEXEC", "1", 1) != 0) return;
  execv("/proc/self/exe", argv);
  /* exec failed: carry on with the caches on; R11 is then noisier, not wrong */
}

#define OPTIONS(X)                                                                              \
  X(O_PLUGINS, "plugins", "DIR", "the folder of the plugins' manifests (*.mi-plugin)")          \
  X(O_PLUGIN, "plugin", "NAME", "only the plugin of this name")                                 \
  X(O_RULE, "rule", "N", "only rule N (repeatable)")                                            \
  X(O_TIMEOUT, "timeout", "SECONDS", "a rule running longer fails (default 120, at most 3600)") \
  MI_CLI_OPT_JSON(X)                                                                            \
  X(O_LIST, "list-rules", NULL, "list the rules and exit")
MI_CLI_TABLE(OPTIONS, k_opts);

/* Parses argv into o; -1 to go on, else the exit status. */
static int parse(int argc, char **argv, options_t *o) {
  mi_cli_t c = {0};
  long long v = 0;
  int k, st;
  c.prog = "mi-conform";
  c.usage =
      "mi-conform --plugins DIR [--plugin NAME] [--rule N]... [--json]\n"
      "  [--timeout SECONDS] [--list-rules]";
  c.about =
      "Runs the numbered conformance rules (docs/conformance.md) against every plugin whose\n"
      "manifest (*.mi-plugin) is in DIR, each rule in its own process. Prints pass, fail or\n"
      "skip per rule with the reason and a summary.";
  c.footer =
      "Exit status: 0 when every rule passed or was skipped, 1 when any failed, 2 on bad\n"
      "usage.";
  c.opts = k_opts;
  c.flags = MI_CLI_VERSION_OPT | MI_CLI_NO_ARGS;
  mi_cli_begin(&c, argc, argv);
  while ((k = mi_cli_step(&c, &st))) {
    switch (k) {
    case O_PLUGINS: o->dir = c.value; break;
    case O_PLUGIN: o->only_plugin = c.value; break;
    case O_JSON: o->json = 1; break;
    case O_RULE:
      if (mi_cli_int(&c, 1, conform_rule_count, &v)) return 2;
      if (o->rule_filter_count >= 64) return mi_cli_error(&c, "at most 64 --rule options");
      o->rules[o->rule_filter_count++] = (int)v;
      break;
    case O_TIMEOUT:
      if (mi_cli_int(&c, 1, 3600, &v)) return 2;
      o->timeout_s = (int)v;
      break;
    case O_LIST:
      for (int r = 0; r < conform_rule_count; r++)
        printf("R%-2d %-14s %s\n", conform_rules[r].number, conform_rules[r].id,
               conform_rules[r].title);
      return 0;
    }
  }
  if (st != MI_CLI_GO_ON) return st;
  if (!o->dir) return mi_cli_error(&c, "--plugins DIR is required");
  return -1;
}

int main(int argc, char **argv) {
  options_t o = {0};
  DIR *d;
  struct dirent *de;
  char **names = NULL;
  size_t count = 0, cap = 0;
  int total_fails = 0, matched = 0, first_json = 1, k;

  reexec_without_tcache(argv);
  o.timeout_s = 120;
  if ((k = parse(argc, argv, &o)) >= 0) return k;
  d = opendir(o.dir);
  if (!d) {
    fprintf(stderr, "mi-conform: %s: cannot open plugin directory: %s\n", o.dir, strerror(errno));
    return 2;
  }
  while ((de = readdir(d))) {
    size_t len = strlen(de->d_name);
    if (len < 10 || strcmp(de->d_name + len - 10, ".mi-plugin") != 0) continue;
    if (count == cap) {
      char **grown = realloc(names, (cap ? cap * 2 : 16) * sizeof *names);
      if (!grown) break;
      names = grown;
      cap = cap ? cap * 2 : 16;
    }
    size_t need = strlen(o.dir) + len + 2;
    names[count] = malloc(need);
    if (!names[count]) break;
    snprintf(names[count], need, "%s/%s", o.dir, de->d_name);
    count++;
  }
  closedir(d);
  qsort(names, count, sizeof *names, name_cmp);

  if (o.json) printf("{\"plugins\":[");
  for (size_t i = 0; i < count; i++) {
    int f = conform_plugin(&o, names[i], &first_json);
    if (f >= 0) {
      matched++;
      total_fails += f;
    }
    free(names[i]);
  }
  free(names);
  if (o.json) printf("],\"failed\":%d}\n", total_fails);
  if (matched == 0) {
    fprintf(stderr, "mi-conform: %s: no plugin %s%s\n", o.dir,
            o.only_plugin ? "named " : "manifest (*.mi-plugin) found",
            o.only_plugin ? o.only_plugin : "");
    return 2;
  }
  return total_fails ? 1 : 0;
}
