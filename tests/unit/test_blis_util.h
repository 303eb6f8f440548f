/* test_blis_util.h - what the blis-cpu tests share: the harness and the blis-cpu driver
 * (tools/drive/drive_blis.h: load the plugin, build kernel descs, run). */
#ifndef TEST_BLIS_UTIL_H
#define TEST_BLIS_UTIL_H

/* test_util.h first: it defines DRIVE_REQUIRE as its REQUIRE for the drive header. */
#include "test_util.h"

#include "drive_blis.h"

#endif
