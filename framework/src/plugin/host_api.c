/* host_api.c - the services the host hands each plugin (logging, allocation, settings). */
/* secure_getenv is a GNU extension. */
#define _GNU_SOURCE 1
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
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

/* The host handles handed out and not yet taken back. A plugin passes its handle back to every
 * service; one it forged (or kept after unload) must be an error, not a pointer the host
 * follows, and the only way to know a pointer without following it is to have kept it. This is
 * the one process-wide table of the host: plugins are process-wide too (dlopen).
 *
 * The services table a plugin was given (and the handle in it) is never freed: a plugin thread
 * still running after unload reads its function pointers from it, and a freed table would be a
 * crash at exit; a handle that is never reused cannot come back to life as another plugin's. A
 * released table goes on `dead`, reachable, about 64 bytes per load. */
#define MAX_LIVE 1024
typedef struct host_table {
  mi_host_api_t api;         /* what the plugin holds; api.host_ctx is this node */
  mi__plugin_entry_t *entry; /* NULL once released */
  struct host_table *next;   /* on the dead list */
} host_table_t;

static struct {
  pthread_mutex_t lock;
  host_table_t *live[MAX_LIVE];
  int32_t n;
  int32_t refused; /* forged calls refused so far: a preflight refuses the plugin that made them */
  int32_t stale;   /* calls through a handle already taken back (a leaked thread after unload) */
  host_table_t *dead;
} g_handles = {PTHREAD_MUTEX_INITIALIZER, {0}, 0, 0, 0, NULL};

int32_t mi__host_api_refused(void) {
  int32_t n;
  pthread_mutex_lock(&g_handles.lock);
  n = g_handles.refused;
  pthread_mutex_unlock(&g_handles.lock);
  return n;
}

void mi__host_api_release(mi__plugin_entry_t *e) {
  pthread_mutex_lock(&g_handles.lock);
  for (int32_t i = 0; i < g_handles.n; i++)
    if (g_handles.live[i]->entry == e) {
      host_table_t *t = g_handles.live[i];
      g_handles.live[i] = g_handles.live[--g_handles.n];
      t->entry = NULL;
      t->next = g_handles.dead;
      g_handles.dead = t;
      break;
    }
  pthread_mutex_unlock(&g_handles.lock);
}

/* The entry behind a handle, or NULL (and one line in the log) when it is not one of ours.
 * A handle the host gave out and took back (a thread the plugin leaked, still running after
 * unload) is refused too, but is not counted as forged: when that call lands after unload is a
 * matter of scheduling, and the load that leaked the thread was judged while it was live.
 * It is logged once per process, not on every call of a thread that spins. */
static const mi__plugin_entry_t *handle_check(void *host_ctx, const char *service) {
  const mi__plugin_entry_t *found = NULL;
  int stale = 0, first_stale;
  pthread_mutex_lock(&g_handles.lock);
  for (int32_t i = 0; i < g_handles.n && !found; i++)
    if ((void *)g_handles.live[i] == host_ctx) found = g_handles.live[i]->entry;
  for (host_table_t *t = found ? NULL : g_handles.dead; t && !stale; t = t->next)
    stale = (void *)t == host_ctx;
  first_stale = stale && g_handles.stale++ == 0;
  g_handles.refused += !found && !stale;
  pthread_mutex_unlock(&g_handles.lock);
  if (!found && !stale)
    fprintf(stderr,
            "mi-host: a plugin called host service '%s' with handle %p, which the host "
            "never gave out: call refused\n",
            service, host_ctx);
  else if (first_stale)
    fprintf(stderr,
            "mi-host: a plugin called host service '%s' with handle %p after the host "
            "took it back (a thread left running after unload?): call refused\n",
            service,
            host_ctx);
  return found;
}

static void host_log(void *host_ctx, int32_t level, const char *plugin, const char *message) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  const mi__plugin_entry_t *e = handle_check(host_ctx, "log");
  const char *who = plugin && plugin[0] ? plugin : (e && e->pub.name ? e->pub.name : "plugin");
  if (!e) return;
  if (level < MI_LOG_ERROR || level > MI_LOG_DEBUG) level = MI_LOG_INFO;
  /* Debug chatter is only wanted while someone is looking at the loader. */
  if (level == MI_LOG_DEBUG && !(e && e->debug)) return;
  fprintf(stderr, "[%s] %s: %s\n", who, names[level], message ? message : "");
}

static void *host_alloc(void *host_ctx, size_t size) {
  if (!handle_check(host_ctx, "alloc")) return NULL;
  return malloc(size ? size : 1);
}

/* A forged handle's free leaks rather than frees: the pointer came from the same forger. */
static void host_free(void *host_ctx, void *ptr) {
  if (!handle_check(host_ctx, "free")) return;
  free(ptr);
}

/* Settings come from the environment as MI_SETTING_<KEY> (key upper-cased, other characters
 * as '_'); a recipe-driven host may replace this later. The returned string is owned by the
 * environment and stays valid while it is not modified. Like MI_PLUGIN_PATH, they are ignored
 * in setuid/setgid processes: whoever runs such a program must not steer its plugins. */
static const char *host_get_setting(void *host_ctx, const char *key) {
  char name[128];
  size_t n = sizeof "MI_SETTING_" - 1, i;
  if (!handle_check(host_ctx, "get_setting")) return NULL;
  if (!key || !key[0] || strlen(key) + n + 1 > sizeof name) return NULL;
  memcpy(name, "MI_SETTING_", n);
  for (i = 0; key[i]; i++) {
    unsigned char c = (unsigned char)key[i];
    name[n + i] = isalnum(c) ? (char)toupper(c) : '_';
  }
  name[n + i] = '\0';
  return secure_getenv(name);
}

int32_t mi__host_api_init(mi__plugin_entry_t *e) {
  host_table_t *t = calloc(1, sizeof *t);
  if (!t) return MI_ERR_OUT_OF_MEMORY;
  t->entry = e;
  t->api.struct_size = sizeof t->api;
  t->api.abi_major = MI_ABI_VERSION_MAJOR;
  t->api.abi_minor = MI_ABI_VERSION_MINOR;
  t->api.host_ctx = t;
  t->api.log = host_log;
  t->api.alloc = host_alloc;
  t->api.free = host_free;
  t->api.get_setting = host_get_setting;
  pthread_mutex_lock(&g_handles.lock);
  if (g_handles.n == MAX_LIVE) {
    pthread_mutex_unlock(&g_handles.lock);
    free(t);
    return MI_ERR_OUT_OF_MEMORY;
  }
  g_handles.live[g_handles.n++] = t;
  pthread_mutex_unlock(&g_handles.lock);
  e->host = &t->api;
  return MI_OK;
}
