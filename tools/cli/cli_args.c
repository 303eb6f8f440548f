/* cli_args.c - the option parser every program shares: getopt_long over a table of options,
 * with one-line messages that name the option, and "did you mean" for a misspelt one. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mi_cli.h"

/* Keys of the options every table gets; above what a table may use. */
enum { KEY_HELP = 'h',
       KEY_VERSION = 0x7ff1,
       MAX_OPTS = 96 };

void mi_cli_begin(mi_cli_t *c, int argc, char **argv) {
  c->argc = argc;
  c->argv = argv;
  c->done = 0;
  c->rest = argc;
  c->value = c->opt = NULL;
  /* 0 re-initialises glibc's getopt, so a second parse (a subcommand's) starts afresh. */
  optind = 0;
  opterr = 0;
}

static void vmessage(const mi_cli_t *c, const char *fmt, va_list ap) {
  fprintf(stderr, "%s: ", c->prog);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, " (see %s --help)\n", c->prog);
}

int mi_cli_error(const mi_cli_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(c, fmt, ap);
  va_end(ap);
  return MI_CLI_USAGE;
}

/* The same message, for mi_cli_next's callers: MI_CLI_ERROR. */
static int refuse(const mi_cli_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(const mi_cli_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(c, fmt, ap);
  va_end(ap);
  return MI_CLI_ERROR;
}

/* The long options, --help and --version included; returns how many. */
static size_t long_table(const mi_cli_t *c, struct option *lo, char *shorts, size_t cap) {
  size_t n = 0, s = 0;
  shorts[s++] = '-'; /* positional arguments come back in order, as key 1 */
  shorts[s++] = ':'; /* a missing value is ':', not '?' */
  shorts[s++] = 'h';
  for (const mi_cli_opt_t *o = c->opts; o && o->name && n + 3 < MAX_OPTS; o++) {
    lo[n++] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL, o->key};
    if (o->key > ' ' && o->key < 127 && s + 3 < cap) {
      shorts[s++] = (char)o->key;
      if (o->arg) shorts[s++] = ':';
    }
  }
  lo[n++] = (struct option){"help", no_argument, NULL, KEY_HELP};
  if (c->flags & MI_CLI_VERSION_OPT)
    lo[n++] = (struct option){"version", no_argument, NULL, KEY_VERSION};
  lo[n] = (struct option){NULL, 0, NULL, 0};
  shorts[s] = '\0';
  return n;
}

/* "--name" of the table entry with this key (or "-k" for a letter without a long name). */
static const char *name_of(mi_cli_t *c, const struct option *lo, int key) {
  for (; lo->name; lo++)
    if (lo->val == key) {
      snprintf(c->opt_text, sizeof c->opt_text, "--%s", lo->name);
      return c->opt_text;
    }
  snprintf(c->opt_text, sizeof c->opt_text, "-%c", key > ' ' && key < 127 ? key : '?');
  return c->opt_text;
}

/* An unknown, ambiguous or value-less long option `arg` ("--name[=value]"). */
static int bad_long(const mi_cli_t *c, const struct option *lo, size_t n, const char *arg) {
  const char *eq = strchr(arg, '=');
  size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2), matches = 0;
  const char *names[MAX_OPTS], *hit;
  char word[64];
  snprintf(word, sizeof word, "%.*s", (int)(len < sizeof word ? len : sizeof word - 1), arg + 2);
  for (size_t i = 0; i < n; i++) {
    names[i] = lo[i].name;
    if (strcmp(lo[i].name, word) == 0 && eq && lo[i].has_arg == no_argument)
      return refuse(c, "--%s takes no value", word);
    if (strncmp(lo[i].name, word, len) == 0) matches++;
  }
  if (matches > 1) {
    char list[512];
    size_t at = 0;
    for (size_t i = 0; i < n && at < sizeof list; i++)
      if (strncmp(lo[i].name, word, len) == 0)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s--%s", at ? ", " : "", lo[i].name);
    return refuse(c, "ambiguous option '--%s' (%s)", word, list);
  }
  if ((hit = mi_cli_suggest(word, names, n)))
    return refuse(c, "unknown option '--%s'; did you mean '--%s'?", word, hit);
  return refuse(c, "unknown option '--%s'", word);
}

/* Is `v` the name of one of our long options (so it was not meant as a value)? */
static int names_option(const struct option *lo, const char *v) {
  size_t len;
  if (strncmp(v, "--", 2) != 0 || !v[2]) return 0;
  len = strcspn(v + 2, "=");
  for (; lo->name; lo++)
    if (strlen(lo->name) == len && strncmp(lo->name, v + 2, len) == 0) return 1;
  return 0;
}

int mi_cli_step(mi_cli_t *c, int *exit_status) {
  int k = mi_cli_next(c);
  *exit_status = k == MI_CLI_EXIT ? 0 : k == MI_CLI_ERROR ? MI_CLI_USAGE
                                                          : MI_CLI_GO_ON;
  return k == MI_CLI_END || k == MI_CLI_EXIT || k == MI_CLI_ERROR ? 0 : k;
}

int mi_cli_next(mi_cli_t *c) {
  struct option lo[MAX_OPTS];
  char shorts[2 * MAX_OPTS + 4];
  size_t n;
  int key, idx = -1;

  c->value = c->opt = NULL;
  if (c->done) {
    if (c->rest >= c->argc) return MI_CLI_END;
    c->value = c->argv[c->rest++];
    if (c->flags & MI_CLI_NO_ARGS) return refuse(c, "unexpected argument '%s'", c->value);
    return MI_CLI_ARG;
  }
  n = long_table(c, lo, shorts, sizeof shorts);
  key = getopt_long(c->argc, c->argv, shorts, lo, &idx);
  if (key == -1) { /* the end, or "--": what follows is positional */
    c->done = 1;
    c->rest = optind;
    return mi_cli_next(c);
  }
  if (key == 1) {
    c->value = optarg;
    if (c->flags & MI_CLI_NO_ARGS) return refuse(c, "unexpected argument '%s'", c->value);
    if (c->flags & MI_CLI_STOP_AT_ARG) {
      c->done = 1;
      c->rest = optind;
    }
    return MI_CLI_ARG;
  }
  if (key == '?') {
    const char *a = optind > 0 && optind <= c->argc ? c->argv[optind - 1] : "";
    if (strncmp(a, "--", 2) == 0) return bad_long(c, lo, n, a);
    return refuse(c, "unknown option '-%c'", optopt > ' ' && optopt < 127 ? optopt : '?');
  }
  if (key == ':') {
    const char *a = optind > 0 && optind <= c->argc ? c->argv[optind - 1] : "";
    size_t len = strlen(a);
    /* --name, or an abbreviation of it (getopt takes unambiguous prefixes) */
    for (size_t i = 0; strncmp(a, "--", 2) == 0 && c->opts && c->opts[i].name; i++)
      if (strncmp(c->opts[i].name, a + 2, len - 2) == 0)
        return refuse(c, "--%s needs a value (%s)", c->opts[i].name, c->opts[i].arg);
    return refuse(c, "%s needs a value", strncmp(a, "--", 2) == 0 ? a : name_of(c, lo, optopt));
  }
  c->opt = idx >= 0 ? (snprintf(c->opt_text, sizeof c->opt_text, "--%s", lo[idx].name), c->opt_text)
                    : name_of(c, lo, key);
  if (key == KEY_HELP) {
    mi_cli_help(c, stdout);
    return MI_CLI_EXIT;
  }
  if (key == KEY_VERSION) {
    mi_cli_version(stdout);
    return MI_CLI_EXIT;
  }
  if (optarg) {
    /* getopt takes the next word as the value whatever it is; `--deployment --help` asks
     * for help, and `--model --device x` forgot the model, rather than naming a file. */
    if (optarg == c->argv[optind - 1] && optarg[0] == '-') {
      if (strcmp(optarg, "--help") == 0 || strcmp(optarg, "-h") == 0) {
        mi_cli_help(c, stdout);
        return MI_CLI_EXIT;
      }
      if (names_option(lo, optarg))
        return refuse(c, "%s needs a value, not the option '%s'", c->opt, optarg);
    }
    c->value = optarg;
  }
  return key;
}

int mi_cli_int(const mi_cli_t *c, long long lo, long long hi, long long *out) {
  char *end = NULL;
  long long v;
  errno = 0;
  v = c->value ? strtoll(c->value, &end, 10) : 0;
  if (!c->value || errno || end == c->value || *end || v < lo || v > hi)
    return mi_cli_error(c, "%s '%s': expected an integer in %lld..%lld", c->opt,
                        c->value ? c->value : "", lo, hi);
  *out = v;
  return 0;
}

int mi_cli_int_to(const mi_cli_t *c, int lo, int hi, int *out) {
  long long v;
  int rc = mi_cli_int(c, lo, hi, &v);
  if (rc == 0) *out = (int)v;
  return rc;
}

int mi_cli_double(const mi_cli_t *c, double lo, double hi, double *out) {
  char *end = NULL;
  double v;
  errno = 0;
  v = c->value ? strtod(c->value, &end) : 0;
  if (!c->value || errno || end == c->value || *end || !isfinite(v) || v < lo || v > hi)
    return mi_cli_error(c, "%s '%s': expected a number in %g..%g", c->opt,
                        c->value ? c->value : "", lo, hi);
  *out = v;
  return 0;
}

int mi_cli_names_input(const char *spec, const char *name, size_t n) {
  return strncmp(spec, name, n) == 0 && (spec[n] == '=' || spec[n] == ':');
}

int32_t mi_cli_check_values(const char *const *values, int nvalue, const char *const *inputs, int ninput,
                            const char *const *shapes, int nshape, mi_error_t *err) {
  for (int i = 0; i < nvalue; i++) {
    size_t n = strcspn(values[i], "=");
    for (int k = 0; k < ninput + nshape; k++)
      if (mi_cli_names_input(k < ninput ? inputs[k] : shapes[k - ninput], values[i], n))
        return mi_errorf(err, MI_ERR_INVALID_ARGUMENT, "--value '%s': that input also has --%s", values[i],
                         k < ninput ? "input" : "shape");
  }
  return MI_OK;
}
