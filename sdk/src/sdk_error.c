/* sdk_error.c - the SDK's printf-style error and log helpers, and string and INTS attributes. */
#include <stdio.h>

#include "metainfer/mi_sdk.h"

int32_t mi_sdk_verrorf(mi_error_t *err, int32_t code, const char *fmt, va_list ap) {
  if (err) {
    err->code = code;
    if (!fmt || vsnprintf(err->message, sizeof err->message, fmt, ap) < 0) err->message[0] = '\0';
  }
  return code;
}

int32_t mi_sdk_errorf(mi_error_t *err, int32_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mi_sdk_verrorf(err, code, fmt, ap);
  va_end(ap);
  return code;
}

void mi_sdk_vlogf(const mi_host_api_t *host, int32_t level, const char *plugin, const char *fmt,
                  va_list ap) {
  char line[1024];
  /* An older host's table may end before `log`: read only what it declared. */
  if (!host || !MI_HAS_FIELD(host, mi_host_api_t, log) || !host->log || !fmt) return;
  if (vsnprintf(line, sizeof line, fmt, ap) < 0) line[0] = '\0';
  host->log(host->host_ctx, level, plugin, line);
}

void mi_sdk_logf(const mi_host_api_t *host, int32_t level, const char *plugin, const char *fmt,
                 ...) {
  va_list ap;
  va_start(ap, fmt);
  mi_sdk_vlogf(host, level, plugin, fmt, ap);
  va_end(ap);
}

const char *mi_sdk_attr_string(const mi_node_desc_t *node, const char *name, const char *dflt) {
  const mi_attr_t *a = node ? mi_sdk_attr(node, name) : NULL;
  return a && a->type == MI_ATTR_STRING && a->s ? a->s : dflt;
}

int64_t mi_sdk_attr_ints_at(const mi_node_desc_t *node, const char *name, int32_t i, int64_t dflt) {
  const mi_attr_t *a = node ? mi_sdk_attr(node, name) : NULL;
  return a && a->type == MI_ATTR_INTS && a->ints && i >= 0 && i < a->count ? a->ints[i] : dflt;
}

int mi_sdk_attr_ints(const mi_node_desc_t *node, const char *name, int64_t *out, int32_t want,
                     int64_t dflt) {
  const mi_attr_t *a = node ? mi_sdk_attr(node, name) : NULL;
  int32_t i;
  for (i = 0; i < want; i++) out[i] = dflt;
  if (!a) return 1;
  if (a->type != MI_ATTR_INTS || a->count != want) return 0;
  for (i = 0; i < want; i++) out[i] = a->ints[i];
  return 1;
}
