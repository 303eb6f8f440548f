/* cli_help.c - the help text written from the option table, so every option is in it. */
#include <string.h>

#include "mi_cli.h"

enum { COL = 26 }; /* where the options' descriptions start */

/* "  --name ARG" (or "  -k, --name ARG") padded to COL, then the help's lines aligned. */
static void option_line(FILE *f, int key, const char *name, const char *arg, const char *help) {
  int w = 0;
  if (key > ' ' && key < 127) w += fprintf(f, "  -%c, ", key);
  else
    w += fprintf(f, "      ");
  w += fprintf(f, "--%s", name);
  if (arg) w += fprintf(f, " %s", arg);
  if (w >= COL - 1) {
    fputc('\n', f);
    w = 0;
  }
  while (help && *help) {
    size_t len = strcspn(help, "\n");
    fprintf(f, "%*s%.*s\n", COL - w, "", (int)len, help);
    w = 0;
    help += len + (help[len] == '\n');
  }
  if (!help) fputc('\n', f);
}

void mi_cli_help(const mi_cli_t *c, FILE *f) {
  const char *u = c->usage ? c->usage : "";
  /* The usage's later lines line up under the first. */
  fprintf(f, "usage: ");
  for (int first = 1; *u; first = 0) {
    size_t len, indent = strspn(u, " ");
    /* a later line is another form ("prog ..."), or, indented, more of the one before */
    if (!first) fprintf(f, "       %s", indent ? "    " : "");
    u += indent;
    len = strcspn(u, "\n");
    fprintf(f, "%.*s\n", (int)len, u);
    u += len + (u[len] == '\n');
  }
  if (c->about) fprintf(f, "\n%s\n", c->about);
  fprintf(f, "\noptions:\n");
  for (const mi_cli_opt_t *o = c->opts; o && o->name; o++)
    if (o->help) option_line(f, o->key, o->name, o->arg, o->help);
  option_line(f, 'h', "help", NULL, "this help");
  if (c->flags & MI_CLI_VERSION_OPT)
    option_line(f, 0, "version", NULL, "the version, plugin ABI version and commit");
  if (c->footer) fprintf(f, "\n%s\n", c->footer);
}
