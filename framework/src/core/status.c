/* status.c - the one table of status messages, and error values with formatted messages. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "metainfer/mi_core.h"

static const char *const k_messages[] = {
    [MI_OK] = "ok",
    [MI_ERR_INVALID_ARGUMENT] = "invalid argument",
    [MI_ERR_UNSUPPORTED] = "unsupported",
    [MI_ERR_OUT_OF_MEMORY] = "out of memory",
    [MI_ERR_DEVICE] = "device error",
    [MI_ERR_INVALID_CONFIG] = "invalid configuration",
    [MI_ERR_ABI] = "ABI mismatch",
    [MI_ERR_IO] = "I/O error",
    [MI_ERR_PARSE] = "malformed input",
    [MI_ERR_NOT_FOUND] = "not found",
    [MI_ERR_TIMEOUT] = "timed out",
    [MI_ERR_INTERNAL] = "internal error",
    [MI_ERR_CRASHED] = "crashed",
    [MI_ERR_CONSTRAINT] = "constraint violated",
};

MI_API const char *mi_version(void) { return MI_VERSION_STRING; }

MI_API const char *mi_status_message(int32_t code) {
  if (code < 0 || (size_t)code >= sizeof k_messages / sizeof k_messages[0] || !k_messages[code])
    return "unknown status";
  return k_messages[code];
}

MI_API int32_t mi_errorf(mi_error_t *err, int32_t code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* How much of a cut message's beginning is kept: the outermost node and a level or two. */
#define NESTED_HEAD 96

int32_t mi__errorf_nested(mi_error_t *err, int32_t code, const char *fmt, ...) {
  char whole[4 * MI_ERROR_MESSAGE_SIZE];
  size_t n, cap = sizeof err->message, tail;
  va_list ap;
  if (!err) return code;
  va_start(ap, fmt);
  vsnprintf(whole, sizeof whole, fmt, ap);
  va_end(ap);
  err->code = code;
  n = strlen(whole);
  if (n < cap) {
    memcpy(err->message, whole, n + 1);
    return code;
  }
  tail = cap - 1 - NESTED_HEAD - 5;
  snprintf(err->message, cap, "%.*s ... %s", NESTED_HEAD, whole, whole + n - tail);
  return code;
}

MI_API void mi_error_clear(mi_error_t *err) {
  if (err) {
    err->code = MI_OK;
    err->message[0] = '\0';
  }
}
