/* host_api.c - the services the host hands each plugin (logging, allocation, settings). */
/* secure_getenv is a GNU extension. */
#define _GNU_SOURCE 1
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin_internal.h"

void mi__loader_trace(int debug, const char *fmt, ...) {
  va_list ap;
  if (!debug) return;
  va_start(ap, fmt);
  fputs("mi-loader: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void host_log(void *host_ctx, int32_t level, const char *plugin, const char *message) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  const mi__plugin_entry_t *e = host_ctx;
  const char *who = plugin && plugin[0] ? plugin : (e && e->pub.name ? e->pub.name : "plugin");
  if (level < MI_LOG_ERROR || level > MI_LOG_DEBUG) level = MI_LOG_INFO;
  /* Debug chatter is only wanted while someone is looking at the loader. */
  if (level == MI_LOG_DEBUG && !(e && e->debug)) return;
  fprintf(stderr, "[%s] %s: %s\n", who, names[level], message ? message : "");
}

static void *host_alloc(void *host_ctx, size_t size) {
  (void)host_ctx;
  return malloc(size ? size : 1);
}

static void host_free(void *host_ctx, void *ptr) {
  (void)host_ctx;
  free(ptr);
}

/* Settings come from the environment as MI_SETTING_<KEY> (key upper-cased, other characters
 * as '_'); a recipe-driven host may replace this later. The returned string is owned by the
 * environment and stays valid while it is not modified. Like MI_PLUGIN_PATH, they are ignored
 * in setuid/setgid processes: whoever runs such a program must not steer its plugins. */
static const char *host_get_setting(void *host_ctx, const char *key) {
  char name[128];
  size_t n = sizeof "MI_SETTING_" - 1, i;
  (void)host_ctx;
  if (!key || !key[0] || strlen(key) + n + 1 > sizeof name) return NULL;
  memcpy(name, "MI_SETTING_", n);
  for (i = 0; key[i]; i++) {
    unsigned char c = (unsigned char)key[i];
    name[n + i] = isalnum(c) ? (char)toupper(c) : '_';
  }
  name[n + i] = '\0';
  return secure_getenv(name);
}

void mi__host_api_init(mi__plugin_entry_t *e) {
  memset(&e->host, 0, sizeof e->host);
  e->host.struct_size = sizeof e->host;
  e->host.abi_major = MI_ABI_VERSION_MAJOR;
  e->host.abi_minor = MI_ABI_VERSION_MINOR;
  e->host.host_ctx = e;
  e->host.log = host_log;
  e->host.alloc = host_alloc;
  e->host.free = host_free;
  e->host.get_setting = host_get_setting;
}
