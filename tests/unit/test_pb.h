/* test_pb.h - a tiny protobuf writer for hand-encoding ONNX models in tests, independent of
 * the importer it tests. A header (not test_*.c), so the test glob does not make it a test. */
#ifndef MI_TEST_PB_H
#define MI_TEST_PB_H

#include <stdint.h>
#include <string.h>

typedef struct pb {
  uint8_t d[4096];
  size_t n;
} pb_t;

static inline void varint(pb_t *b, uint64_t v) {
  do {
    uint8_t c = v & 0x7f;
    v >>= 7;
    b->d[b->n++] = c | (v ? 0x80 : 0);
  } while (v);
}
static inline void tag(pb_t *b, int field, int wt) {
  varint(b, ((uint64_t)field << 3) | (uint64_t)wt);
}
static inline void put_int(pb_t *b, int field, int64_t v) {
  tag(b, field, 0);
  varint(b, (uint64_t)v);
}
static inline void put_bytes(pb_t *b, int field, const void *p, size_t n) {
  tag(b, field, 2);
  varint(b, n);
  memcpy(b->d + b->n, p, n);
  b->n += n;
}
static inline void put_str(pb_t *b, int field, const char *s) { put_bytes(b, field, s, strlen(s)); }
static inline void put_msg(pb_t *b, int field, const pb_t *m) { put_bytes(b, field, m->d, m->n); }

#endif
