/* util.c - small helpers of the measure family: statistics written as JSON. */
#include "measure/measure_internal.h"

void mi__sbuf_json_stats(mi__sbuf_t *b, const mi_stats_t *st, double scale) {
  mi__sbuf_printf(b, "{\"n\":%d,\"median\":", (int)st->n);
  mi__sbuf_json_double(b, st->median * scale);
  mi__sbuf_printf(b, ",\"trimmed_mean\":");
  mi__sbuf_json_double(b, st->trimmed_mean * scale);
  mi__sbuf_printf(b, ",\"p10\":");
  mi__sbuf_json_double(b, st->p10 * scale);
  mi__sbuf_printf(b, ",\"p90\":");
  mi__sbuf_json_double(b, st->p90 * scale);
  mi__sbuf_printf(b, ",\"cv\":");
  mi__sbuf_json_double(b, st->cv);
  mi__sbuf_printf(b, "}");
}
