/* bench_util.h - what the plugin benchmarks share: the plugin drivers' environment (tools/drive:
 * $MI_BUILD, paths) and BENCH_REQUIRE, a check that says where it failed and exits 1. A
 * benchmark measures, it does not test: it stops on what it cannot go on without, and never
 * counts failures or skips like the unit tests (tests/unit/test_util.h), whose headers it does
 * not include. */
#ifndef MI_BENCH_UTIL_H
#define MI_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "drive_env.h"

#define BENCH_REQUIRE(cond) DRIVE_REQUIRE(cond)

#endif
