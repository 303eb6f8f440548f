/* mi_cli.h - one command-line convention for every Meta Infer program: options parsed by
 * getopt_long from a table that also writes the help, --help and --version answered the same
 * way everywhere, "did you mean" for a misspelt option or command, and the paths they share. */
#ifndef MI_CLI_H
#define MI_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "metainfer/mi.h"

/** One option. A table of them ends with an entry whose name is NULL. */
typedef struct mi_cli_opt {
  const char *name; /* the long name, without "--" */
  int key;          /* what mi_cli_next returns for it: a short letter ('o' is -o) or >= 256 */
  const char *arg;  /* the value's name ("FILE") when it takes one; NULL for a switch */
  const char *help; /* one or more '\n'-separated lines; NULL: an alias, left out of the help */
} mi_cli_opt_t;

/** A program lists each option once, in a macro LIST(X) of X(KEY, "name", "ARG" or NULL,
 * "help") lines; then MI_CLI_TABLE(LIST, k_opts); makes the keys (from 256, above every short
 * letter) and the table k_opts with its end (MI_CLI_KEYS and MI_CLI_OPTS, for a program that
 * wants them apart). */
#define MI_CLI_KEYS(list) MI_CLI_KEY_BELOW_FIRST_ = 255, list(MI_CLI_KEY_)
#define MI_CLI_OPTS(list) \
  list(MI_CLI_OPT_) { NULL, 0, NULL, NULL }
#define MI_CLI_TABLE(list, table) \
  enum { MI_CLI_KEYS(list) };     \
  static const mi_cli_opt_t table[] = {MI_CLI_OPTS(list)}
#define MI_CLI_KEY_(key, name, arg, help) key,
#define MI_CLI_OPT_(key, name, arg, help) {name, key, arg, help},

/** The options several programs declare with the same meaning and help, for their lists:
 * each group names its keys (O_JSON, ...) so the programs' switches read the same, and its
 * help lives here once. */
/* mi-host's measuring commands (profile, compare, accuracy) and mi-conform. */
#define MI_CLI_OPT_JSON(X) X(O_JSON, "json", NULL, "print one JSON object")
/* mi-host's commands that measure a model in worker processes (profile, compare). */
#define MI_CLI_OPT_MODEL(X) X(O_MODEL, "model", "M.onnx", "the model")
#define MI_CLI_OPT_WORKER_TIMEOUT(X) \
  X(O_TIMEOUT, "timeout", "S", "a worker taking longer than S seconds is killed (default 60)")
/* --shape and --input of mi-host profile, compare and accuracy: the same rules
 * (mi_graph_input_args), a fixed value the same in every run of the model. */
#define MI_CLI_OPTS_MODEL_INPUT(X)                           \
  X(O_SHAPE, "shape", "NAME:D0xD1x...",                      \
    "an input's shape, also NAME=D0,D1,... (dynamic dims;\n" \
    "repeatable)")                                           \
  X(O_INPUT, "input", "NAME=FILE.npy",                       \
    "an input's values, and so its shape, in every run\n"    \
    "(repeatable; an int64 input random data cannot fill)")
/* mi-host profile and compare (mi-run has its own): an input fixed to a value
 * (mi_graph_input_values), so that an If it decides is replaced by its branch. */
#define MI_CLI_OPT_VALUE(X)                             \
  X(O_VALUE, "value", "NAME=V0,V1..",                   \
    "fix an input to a value (numbers or true/false;\n" \
    "repeatable): an If it decides becomes its branch")
/* mi-run and mi-run --deployment: where plugins come from (mi_cli_scan_plugins), where the
 * outputs go (--output is the older name), and the summary as JSON. */
#define MI_CLI_OPT_PLUGINS(X)                                  \
  X(O_PLUGINS, "plugins", "DIR",                               \
    "plugin folder (repeatable, or DIR:DIR...; default:\n"     \
    "$MI_PLUGIN_PATH, else the plugins folder of this build\n" \
    "or installation)")
/* mi-run, mi-host profile and compare: where the nodes the device refuses run. */
#define MI_CLI_OPT_FALLBACK(X)                                       \
  X(O_FALLBACK, "fallback", "DEV",                                   \
    "where the nodes the device refuses run: PLUGIN:INDEX, or\n"     \
    "'ref' (the reference interpreter). Default: the first CPU\n"    \
    "plugin's device (blis-cpu:0) for a device of another plugin;\n" \
    "what it refuses too runs on the reference")
#define MI_CLI_OPTS_OUTPUT_DIR(X)                                                                    \
  X(O_OUTPUT_DIR, "output-dir", "DIR", "write each output as DIR/<output name>.npy (also --output)") \
  X(O_OUTPUT, "output", "DIR", NULL)
#define MI_CLI_OPT_JSON_SUMMARY(X) X(O_JSON, "json", NULL, "print the summary as one JSON object")

/** A program or a subcommand: what its help says, and the parser's state. */
typedef struct mi_cli {
  const char *prog;         /* "mi-run", "mi-host tune": starts every message */
  const char *usage;        /* after "usage: "; further lines start with the program name */
  const char *about;        /* a paragraph after the usage; may be NULL */
  const mi_cli_opt_t *opts; /* the options, not counting --help and --version */
  const char *footer;       /* after the options (exit status, environment); may be NULL */
  int flags;                /* MI_CLI_* below */
  /* parser state (mi_cli_begin) */
  int argc;
  char **argv;
  int done;          /* past "--" or the end */
  int rest;          /* next argv index once done */
  const char *value; /* the option's value, or the positional argument */
  const char *opt;   /* the option's name ("--model"), for messages */
  char opt_text[64];
} mi_cli_t;

enum {
  MI_CLI_VERSION_OPT = 1 << 0, /* answer --version (programs; subcommands leave it out) */
  MI_CLI_STOP_AT_ARG = 1 << 1, /* the first positional argument ends the parse (a command) */
  MI_CLI_NO_ARGS = 1 << 2,     /* options only: a positional argument is refused (MI_CLI_ERROR,
                                  "unexpected argument '...'") instead of returned */
};

/** What mi_cli_next returns besides an option's key. */
enum {
  MI_CLI_END = -1,   /* no more arguments */
  MI_CLI_EXIT = -2,  /* --help or --version was printed: exit 0 */
  MI_CLI_ERROR = -3, /* a one-line message was printed to stderr: exit 2 */
  MI_CLI_ARG = -4,   /* a positional argument, in c->value */
};

/** Starts parsing argv[1..argc-1]; argv[0] is the program or the command name. */
void mi_cli_begin(mi_cli_t *c, int argc, char **argv);
/** The next option's key (its value in c->value), a positional argument, the end, or
 * MI_CLI_EXIT / MI_CLI_ERROR after printing what it had to. With MI_CLI_STOP_AT_ARG, after
 * MI_CLI_ARG the rest of argv starts at c->rest - 1 (the argument itself). */
int mi_cli_next(mi_cli_t *c);
/** The exit status of a program whose command line was wrong. */
#define MI_CLI_USAGE 2
/** mi_cli_step's status while the parse goes on, and after its normal end. */
#define MI_CLI_GO_ON (-1)
/** mi_cli_next for the parse loop every program writes: the next option's key or MI_CLI_ARG
 * (c->value), else 0 once the parse is over, with *exit_status MI_CLI_GO_ON at the end of the
 * line, 0 after --help or --version was printed, MI_CLI_USAGE after a message. */
int mi_cli_step(mi_cli_t *c, int *exit_status);
/** Prints "PROG: <message> (see PROG --help)" to stderr and returns MI_CLI_USAGE. */
int mi_cli_error(const mi_cli_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Parses c->value as an integer in [lo, hi] for the current option: 0, or MI_CLI_USAGE after
 * a message when it is not one. */
int mi_cli_int(const mi_cli_t *c, long long lo, long long hi, long long *out);
/** mi_cli_int into an int option field: *out changes only when the value is good. */
int mi_cli_int_to(const mi_cli_t *c, int lo, int hi, int *out);
/** Parses c->value as a finite number in [lo, hi]: 0, or MI_CLI_USAGE after a message. */
int mi_cli_double(const mi_cli_t *c, double lo, double hi, double *out);

/** Writes the full help: usage, about, every option with its help, footer. */
void mi_cli_help(const mi_cli_t *c, FILE *f);

/** The line every program prints for --version: project version, plugin ABI, git commit. */
void mi_cli_version(FILE *f);

/** The candidate closest to `word` when it is close enough to be a likely misspelling, else
 * NULL (optimal string alignment distance, at most 1 + length / 4 edits). */
const char *mi_cli_suggest(const char *word, const char *const *cands, size_t n);

/** Loads the plugins from `dir` (colon-separated folders) when given, else from where every
 * tool and measurement worker looks (mi_plugin_path: MI_PLUGIN_PATH, else the build tree's or
 * the installed prefix's plugins folder). */
int32_t mi_cli_scan_plugins(mi_registry_t *r, const char *dir, mi_error_t *err);
/* A repeated --plugins: `prev` (NULL: none yet) and `dir` as one search path "prev:dir", kept
 * for the life of the process (mi-host's --plugins is repeatable; the last one used to win here). */
const char *mi_cli_add_plugin_dir(const char *prev, const char *dir);

/** An input is a constant (--value NAME=V) or gets data (--input NAME=FILE, --shape NAME=DIMS or
 * NAME:DIMS), not both: the first --value whose input also has one of the others is an error
 * naming both options. */
int32_t mi_cli_check_values(const char *const *values, int nvalue, const char *const *inputs, int ninput,
                            const char *const *shapes, int nshape, mi_error_t *err);
/** Whether `name` (its first n bytes) is the input a NAME=... or NAME:... option names. */
int mi_cli_names_input(const char *spec, const char *name, size_t n);

/** mkdir -p `dir`. */
int32_t mi_cli_make_dirs(const char *dir, mi_error_t *err);
/** mkdir -p of the folder `file` is in (nothing for a bare file name). */
int32_t mi_cli_make_parent_dirs(const char *file, mi_error_t *err);

#endif
