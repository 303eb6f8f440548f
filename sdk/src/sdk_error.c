/* sdk_error.c - the SDK's printf-style error and log helpers. */
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

void mi_sdk_logf(const mi_host_api_t *host, int32_t level, const char *plugin, const char *fmt,
                 ...) {
  char line[1024];
  va_list ap;
  /* An older host's table may end before `log`: read only what it declared. */
  if (!host || !MI_HAS_FIELD(host, mi_host_api_t, log) || !host->log || !fmt) return;
  va_start(ap, fmt);
  if (vsnprintf(line, sizeof line, fmt, ap) < 0) line[0] = '\0';
  va_end(ap);
  host->log(host->host_ctx, level, plugin, line);
}
