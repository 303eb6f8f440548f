/* test_npy.c - .npy round trips for every dtype and shape, numpy's exact header, and each
 * malformed file refused with MI_ERR_PARSE and a one-line message naming the file. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metainfer/mi.h"

#include "test_util.h"

static char g_dir[64];

static void path_in_dir(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", g_dir, name);
}

static int write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  if (n && fwrite(data, 1, n, f) != n) {
    fclose(f);
    return -1;
  }
  return fclose(f);
}

static void fill_pattern(mi_array_t *a, unsigned seed) {
  unsigned char *p = a->data;
  for (size_t i = 0; i < a->nbytes; i++) p[i] = (unsigned char)(i * 37u + seed * 11u + 1u);
  if (a->dtype == MI_DTYPE_BOOL)
    for (size_t i = 0; i < a->nbytes; i++) p[i] &= 1u;
}

static void round_trip(int32_t dtype, int32_t rank, const int64_t *dims, const char *name) {
  char path[256];
  mi_error_t err = {0};
  mi_array_t *a = mi_array_create(dtype, rank, dims), *b = NULL;
  CHECK(a != NULL, "create %s", name);
  if (!a) return;
  fill_pattern(a, (unsigned)dtype);
  path_in_dir(path, sizeof path, name);
  CHECK(mi_npy_save(path, a, &err) == MI_OK, "save %s: %s", name, err.message);
  CHECK(mi_npy_load(path, &b, &err) == MI_OK, "load %s: %s", name, err.message);
  if (b) {
    CHECK(b->dtype == dtype, "%s dtype %d", name, b->dtype);
    CHECK(b->rank == rank, "%s rank %d", name, b->rank);
    for (int32_t i = 0; i < rank && i < b->rank; i++)
      CHECK(b->dims[i] == dims[i], "%s dim %d", name, i);
    CHECK(b->nbytes == a->nbytes && memcmp(a->data, b->data, a->nbytes) == 0, "%s data", name);
  }
  mi_array_destroy(b);
  mi_array_destroy(a);
}

/* numpy.save(np.zeros((2, 3), np.float32)) writes exactly this header. */
static void numpy_header_matches(void) {
  static const char expect[] =
      "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  char path[256], buf[128];
  int64_t dims[2] = {2, 3};
  mi_array_t *a = mi_array_create(MI_DTYPE_FLOAT32, 2, dims);
  FILE *f;
  path_in_dir(path, sizeof path, "numpy_header.npy");
  CHECK(mi_npy_save(path, a, NULL) == MI_OK, "save");
  f = fopen(path, "rb");
  CHECK(f && fread(buf, 1, sizeof buf, f) == sizeof buf, "read back 128 bytes");
  if (f) fclose(f);
  CHECK(memcmp(buf, expect, sizeof expect - 1) == 0, "header text differs from numpy's");
  for (size_t i = sizeof expect - 1; i < 127; i++) CHECK(buf[i] == ' ', "padding at %zu", i);
  CHECK(buf[127] == '\n', "header ends with a newline");
  mi_array_destroy(a);
}

/* Builds a .npy image with the given version and dict text, followed by `data_bytes` bytes. */
static size_t build(unsigned char *out, int version, const char *dict, size_t data_bytes) {
  size_t dl = strlen(dict), pre = version == 1 ? 10 : 12, n = 0;
  memcpy(out, "\x93NUMPY", 6);
  out[6] = (unsigned char)version;
  out[7] = 0;
  if (version == 1) {
    out[8] = (unsigned char)(dl & 0xff);
    out[9] = (unsigned char)(dl >> 8);
  } else {
    out[8] = (unsigned char)(dl & 0xff);
    out[9] = (unsigned char)(dl >> 8);
    out[10] = out[11] = 0;
  }
  memcpy(out + pre, dict, dl);
  n = pre + dl;
  for (size_t i = 0; i < data_bytes; i++) out[n++] = (unsigned char)i;
  return n;
}

static void valid_versions(void) {
  unsigned char img[512];
  mi_array_t *a = NULL;
  mi_error_t err = {0};
  for (int v = 1; v <= 3; v++) {
    size_t n = build(img, v, "{'descr':'<i8','fortran_order':False,'shape':(3,)}\n", 24);
    CHECK(mi_npy_parse(img, n, "v.npy", &a, &err) == MI_OK, "version %d: %s", v, err.message);
    CHECK(a && a->dtype == MI_DTYPE_INT64 && a->rank == 1 && a->dims[0] == 3, "version %d", v);
    if (a) CHECK(((unsigned char *)a->data)[9] == 9, "data copied");
    mi_array_destroy(a);
    a = NULL;
  }
  /* Keys in another order and double quotes are still a valid Python dict. */
  {
    size_t n = build(img, 1, "{\"shape\": (), \"fortran_order\": False, \"descr\": \"|b1\"}", 1);
    CHECK(mi_npy_parse(img, n, "q.npy", &a, &err) == MI_OK, "reordered: %s", err.message);
    CHECK(a && a->dtype == MI_DTYPE_BOOL && a->rank == 0, "scalar bool");
    mi_array_destroy(a);
  }
}

typedef struct bad_case {
  const char *name;
  int version;
  const char *dict; /* NULL: raw bytes below */
  size_t data_bytes;
} bad_case_t;

static void check_bad(const char *label, const unsigned char *img, size_t n) {
  char path[256];
  mi_array_t *a = (mi_array_t *)(uintptr_t)1;
  mi_error_t err = {0};
  int32_t rc = mi_npy_parse(img, n, "mem-image.npy", &a, &err);
  CHECK(rc == MI_ERR_PARSE, "%s: parse rc %d (%s)", label, rc, err.message);
  CHECK(a == NULL, "%s: out not NULL", label);
  CHECK(strstr(err.message, "mem-image.npy:") == err.message, "%s: message '%s'", label,
        err.message);
  CHECK(strchr(err.message, '\n') == NULL, "%s: message has a newline", label);
  path_in_dir(path, sizeof path, "bad-case.npy");
  CHECK(write_file(path, img, n) == 0, "write");
  a = (mi_array_t *)(uintptr_t)1;
  memset(&err, 0, sizeof err);
  rc = mi_npy_load(path, &a, &err);
  CHECK(rc == MI_ERR_PARSE, "%s: load rc %d (%s)", label, rc, err.message);
  CHECK(a == NULL, "%s: load out not NULL", label);
  CHECK(strstr(err.message, path) == err.message, "%s: load message '%s'", label, err.message);
}

/* numpy's default float: '<f8' reads as FLOAT32, each value rounded to nearest (from a memory
 * image and from a file). */
static void float64_narrowed(void) {
  static const double v[4] = {1.0 / 3.0, -2.5e38, 1e300, 16777217.0};
  unsigned char img[512];
  char path[256];
  mi_array_t *a = NULL;
  mi_error_t err = {0};
  const char *dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }";
  size_t n = build(img, 1, dict, 0);
  memcpy(img + n, v, sizeof v);
  n += sizeof v;
  for (int from_file = 0; from_file < 2; from_file++) {
    if (from_file) {
      path_in_dir(path, sizeof path, "f8.npy");
      CHECK(write_file(path, img, n) == 0, "write");
      CHECK(mi_npy_load(path, &a, &err) == MI_OK, "load: %s", err.message);
    } else {
      CHECK(mi_npy_parse(img, n, "f8.npy", &a, &err) == MI_OK, "parse: %s", err.message);
    }
    CHECK(a && a->dtype == MI_DTYPE_FLOAT32 && a->rank == 2 && a->nbytes == 16, "float32 2x2");
    if (a) {
      const float *f = a->data;
      CHECK(f[0] == (float)v[0] && f[1] == -2.5e38f && isinf(f[2]) && f[3] == 16777216.0f,
            "values %g %g %g %g", f[0], f[1], f[2], f[3]);
    }
    mi_array_destroy(a);
    a = NULL;
  }
  /* the data size is the float64 one: 4 bytes an element is too short */
  n = build(img, 1, dict, 16);
  check_bad("float64 data as float32", img, n);
}

static void malformed(void) {
  static const bad_case_t cases[] = {
      {"unknown descr", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16},
      {"big-endian", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8},
      {"fortran order", 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16},
      {"data too short", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20},
      {"data too long", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 28},
      {"missing brace", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ", 8},
      {"missing key", 1, "{'descr': '<f4', 'shape': (2,), }", 8},
      {"unknown key", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8},
      {"duplicate key", 1,
       "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
       "'shape': (2,)}",
       8},
      {"not a tuple", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", 8},
      {"negative dim", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8},
      {"rank 9", 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }",
       1},
      {"dims overflow", 1,
       "{'descr': '<i8', 'fortran_order': False, "
       "'shape': (4294967296, 4294967296, 16), }",
       0},
      {"dim digits overflow", 1,
       "{'descr': '<i8', 'fortran_order': False, "
       "'shape': (99999999999999999999999,), }",
       0},
      {"unterminated string", 1, "{'descr': '<f4, 'fortran_order': False}", 0},
      {"trailing text", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", 4},
      {"bad bool", 1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", 4},
      {"empty header", 1, "", 0},
      {"version 4", 4, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4},
  };
  unsigned char img[512];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n = build(img, cases[i].version, cases[i].dict, cases[i].data_bytes);
    check_bad(cases[i].name, img, n);
  }
  /* Raw byte cases: bad magic, a truncated prefix, header_len past the end. */
  {
    size_t n = build(img, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4);
    img[1] = 'X';
    check_bad("bad magic", img, n);
    n = build(img, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4);
    check_bad("truncated prefix", img, 7);
    check_bad("truncated header", img, 30);
    img[9] = 0x7f; /* header_len now far beyond the image */
    check_bad("header_len beyond file", img, n);
    n = build(img, 2, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4);
    img[11] = 0x40;
    check_bad("huge v2 header_len", img, n);
    check_bad("empty file", img, 0);
  }
}

static void other_errors(void) {
  char path[256];
  mi_array_t *a = NULL;
  mi_error_t err = {0};
  int64_t d = 3;
  mi_array_t *i4 = mi_array_create(MI_DTYPE_INT4, 1, &d);
  path_in_dir(path, sizeof path, "missing.npy");
  CHECK(mi_npy_load(path, &a, &err) == MI_ERR_IO && a == NULL, "missing file: %s", err.message);
  CHECK(strstr(err.message, "missing.npy") != NULL, "message names the file");
  path_in_dir(path, sizeof path, "int4.npy");
  CHECK(mi_npy_save(path, i4, &err) == MI_ERR_UNSUPPORTED, "int4 refused");
  CHECK(access(path, F_OK) != 0, "nothing written for a refused save");
  mi_array_destroy(i4);
  /* Saving into a missing directory fails cleanly. */
  path_in_dir(path, sizeof path, "no/such/dir/x.npy");
  {
    mi_array_t *f = mi_array_create(MI_DTYPE_FLOAT32, 1, &d);
    CHECK(mi_npy_save(path, f, &err) == MI_ERR_IO, "save into missing dir");
    mi_array_destroy(f);
  }
}

static void no_temp_files_left(void) {
  DIR *d = opendir(g_dir);
  struct dirent *e;
  CHECK(d != NULL, "opendir");
  while (d && (e = readdir(d)) != NULL) CHECK(strstr(e->d_name, ".tmp.") == NULL, "%s", e->d_name);
  if (d) closedir(d);
}

/* The fuzz seeds are valid files: each loads, and saving it again gives the same array. */
static void corpus_seeds_load(void) {
  const char *src = getenv("MI_SRC");
  char dir[1024], path[1400], again[256];
  DIR *d;
  struct dirent *e;
  int count = 0;
  if (!src) return;
  snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/npy", src);
  d = opendir(dir);
  CHECK(d != NULL, "open %s", dir);
  while (d && (e = readdir(d)) != NULL) {
    mi_array_t *a = NULL, *b = NULL;
    mi_error_t err = {0};
    if (!strstr(e->d_name, ".npy")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    CHECK(mi_npy_load(path, &a, &err) == MI_OK, "seed %s: %s", e->d_name, err.message);
    path_in_dir(again, sizeof again, "seed-again.npy");
    if (a) {
      CHECK(mi_npy_save(again, a, &err) == MI_OK, "resave %s", e->d_name);
      CHECK(mi_npy_load(again, &b, &err) == MI_OK && b->nbytes == a->nbytes &&
                memcmp(a->data, b->data, a->nbytes) == 0,
            "seed %s round trip", e->d_name);
    }
    mi_array_destroy(a);
    mi_array_destroy(b);
    count++;
  }
  if (d) closedir(d);
  CHECK(count >= 5, "found %d seeds", count);
}

static void cleanup(void) {
  DIR *d = opendir(g_dir);
  struct dirent *e;
  char path[512];
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
    remove(path);
  }
  if (d) closedir(d);
  rmdir(g_dir);
}

static const int32_t dtypes[] = {MI_DTYPE_FLOAT32, MI_DTYPE_FLOAT16, MI_DTYPE_INT8,
                                 MI_DTYPE_UINT8, MI_DTYPE_INT32, MI_DTYPE_INT64,
                                 MI_DTYPE_BOOL};
static int64_t d23[2] = {2, 3}, d5[1] = {5}, d0[1] = {0}, d8[8] = {1, 2, 1, 3, 1, 2, 2, 1};

static void setup(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/test_npy.XXXXXX");
  REQUIRE(mkdtemp(g_dir));
}

static void round_trip_dtypes(void) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
    char name[64];
    snprintf(name, sizeof name, "rt_%s.npy", mi_dtype_name(dtypes[i]));
    round_trip(dtypes[i], 2, d23, name);
  }
}

static void round_trip_shapes(void) {
  round_trip(MI_DTYPE_FLOAT32, 0, NULL, "scalar.npy");
  round_trip(MI_DTYPE_INT64, 1, d5, "vector.npy");
  round_trip(MI_DTYPE_FLOAT32, 1, d0, "empty.npy");
  round_trip(MI_DTYPE_FLOAT32, 8, d8, "rank8.npy");
  round_trip(MI_DTYPE_UINT8, 8, d8, "rank8_u8.npy");
}

static const tu_case_t tu_cases[] = {
    TU_CASE(round_trip_dtypes),
    TU_CASE(round_trip_shapes),
    TU_CASE(numpy_header_matches),
    TU_CASE(valid_versions),
    TU_CASE(malformed),
    TU_CASE(float64_narrowed),
    TU_CASE(other_errors),
    TU_CASE(corpus_seeds_load),
    TU_CASE(no_temp_files_left),
};

TU_MAIN(setup, cleanup)
