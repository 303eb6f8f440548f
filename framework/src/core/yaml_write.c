/* yaml_write.c - block-style YAML through libyaml's emitter, which quotes and escapes every
 * string it is given: the writer behind every YAML file the framework produces. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/yaml_io.h"

static int ok(mi__yaml_writer_t *w) { return w->open && !w->problem[0]; }

static void emit(mi__yaml_writer_t *w, yaml_event_t *ev, int built, const char *what) {
  if (!built) {
    /* libyaml refuses to build an event from text that is not UTF-8 */
    snprintf(w->problem, sizeof w->problem, "%s is not valid UTF-8", what);
    return;
  }
  if (!yaml_emitter_emit(&w->em, ev))
    snprintf(w->problem, sizeof w->problem, "%s",
             w->em.problem ? w->em.problem : "YAML emitter failed");
}

void mi__yw_begin(mi__yaml_writer_t *w, FILE *f, const char *comment) {
  yaml_event_t ev;
  memset(w, 0, sizeof *w);
  if (comment) {
    fputs("# ", f);
    for (const char *c = comment; *c; c++)
      fputc((unsigned char)*c < 0x20 || *c == 0x7f ? ' ' : *c, f);
    fputc('\n', f);
  }
  if (!yaml_emitter_initialize(&w->em)) {
    snprintf(w->problem, sizeof w->problem, "out of memory");
    return;
  }
  w->open = 1;
  yaml_emitter_set_output_file(&w->em, f);
  yaml_emitter_set_unicode(&w->em, 1);
  yaml_emitter_set_width(&w->em, -1); /* never fold a long string across lines */
  yaml_emitter_set_indent(&w->em, 2);
  emit(w, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING), "stream");
  if (ok(w))
    emit(w, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1), "document");
}

void mi__yw_map(mi__yaml_writer_t *w) {
  yaml_event_t ev;
  if (ok(w))
    emit(w, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE),
         "mapping");
}

void mi__yw_map_end(mi__yaml_writer_t *w) {
  yaml_event_t ev;
  if (ok(w)) emit(w, &ev, yaml_mapping_end_event_initialize(&ev), "mapping");
}

void mi__yw_seq(mi__yaml_writer_t *w) {
  yaml_event_t ev;
  if (ok(w))
    emit(w, &ev,
         yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE),
         "list");
}

void mi__yw_seq_end(mi__yaml_writer_t *w) {
  yaml_event_t ev;
  if (ok(w)) emit(w, &ev, yaml_sequence_end_event_initialize(&ev), "list");
}

static void scalar(mi__yaml_writer_t *w, const char *s, yaml_scalar_style_t style) {
  yaml_event_t ev;
  if (!ok(w)) return;
  if (!s) s = "";
  emit(w, &ev,
       yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)(uintptr_t)s, (int)strlen(s),
                                    style != YAML_DOUBLE_QUOTED_SCALAR_STYLE, 1, style),
       "a string");
}

void mi__yw_key(mi__yaml_writer_t *w, const char *key) { scalar(w, key, YAML_ANY_SCALAR_STYLE); }

void mi__yw_str(mi__yaml_writer_t *w, const char *s) {
  scalar(w, s, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

void mi__yw_num(mi__yaml_writer_t *w, double v) {
  char buf[40];
  if (!isfinite(v)) {
    if (ok(w)) snprintf(w->problem, sizeof w->problem, "a number is not finite");
    return;
  }
  /* The shortest of %.15g and %.17g that reads back exactly: tables stay readable and a
   * figure read back compares equal to the one written. */
  snprintf(buf, sizeof buf, "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
  scalar(w, buf, YAML_PLAIN_SCALAR_STYLE);
}

void mi__yw_int(mi__yaml_writer_t *w, long long v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%lld", v);
  scalar(w, buf, YAML_PLAIN_SCALAR_STYLE);
}

void mi__yw_bool(mi__yaml_writer_t *w, int v) {
  scalar(w, v ? "true" : "false", YAML_PLAIN_SCALAR_STYLE);
}

int32_t mi__yw_end(mi__yaml_writer_t *w, const char *what, mi_error_t *err) {
  yaml_event_t ev;
  if (ok(w)) emit(w, &ev, yaml_document_end_event_initialize(&ev, 1), "document");
  if (ok(w)) emit(w, &ev, yaml_stream_end_event_initialize(&ev), "stream");
  if (ok(w) && !yaml_emitter_flush(&w->em))
    snprintf(w->problem, sizeof w->problem, "%s", w->em.problem ? w->em.problem : "write failed");
  if (w->open) yaml_emitter_delete(&w->em);
  w->open = 0;
  if (w->problem[0]) return mi_errorf(err, MI_ERR_IO, "%s: %s", what, w->problem);
  return MI_OK;
}
