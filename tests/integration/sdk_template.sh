#!/usr/bin/env bash
# sdk_template.sh - the SDK installs on its own, and sdk/template builds against the installed
# SDK alone (CMake package, then pkg-config), loads in mi-host, and exports only the entry.
set -euo pipefail
: "${MI_BUILD:?}" "${MI_SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "sdk_template: $*" >&2; exit 1; }
# A step's output goes to a log that is shown when the step fails (the test's log then says
# which step and why, not only its exit status).
step() {
  local rc=0
  "$@" >"$tmp/step.log" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || { tail -n 40 "$tmp/step.log" >&2; fail "exit $rc: $*"; }
}

# Exactly one dynamic symbol defined by the plugin: mi_plugin_entry.
exports_only_entry() {
  local syms
  syms=$(nm -D --defined-only "$1" | awk '{print $NF}' | grep -v -E '^(_init|_fini)$' | sort)
  [ "$syms" = "mi_plugin_entry" ] || fail "$1 exports more than mi_plugin_entry: $(echo $syms)"
}

prefix="$tmp/prefix"
step cmake --install "$MI_BUILD" --prefix "$prefix" --component sdk
[ -f "$prefix/include/metainfer/mi_plugin.h" ] || fail "header not installed"
[ -f "$prefix/share/pkgconfig/metainfer-sdk.pc" ] || fail "pkg-config file not installed"
[ -f "$prefix/share/cmake/MetaInferSDK/MetaInferSDKConfig.cmake" ] || fail "CMake package not installed"
[ -f "$prefix/share/cmake/MetaInferSDK/MetaInferSDKConfigVersion.cmake" ] || fail "version file missing"

# The template, copied away from the source tree so nothing but the prefix can be found.
cp -r "$MI_SRC/sdk/template" "$tmp/template"

# 1. CMake package.
step cmake -S "$tmp/template" -B "$tmp/b-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
step cmake --build "$tmp/b-cmake" -j2
! grep -rq -- "$MI_SRC" "$tmp/b-cmake/CMakeFiles/mi_template.dir/flags.make" ||
  fail "the CMake-package build used headers from the source tree"

# 2. pkg-config.
step env PKG_CONFIG_PATH="$prefix/share/pkgconfig" PKG_CONFIG_LIBDIR="$prefix/share/pkgconfig" \
  cmake -S "$tmp/template" -B "$tmp/b-pc" -DMI_SDK_USE_PKGCONFIG=ON
step cmake --build "$tmp/b-pc" -j2
grep -q -- "-I$prefix/include" "$tmp/b-pc/CMakeFiles/mi_template.dir/flags.make" ||
  grep -q -- "$prefix/share/pkgconfig/../../include" "$tmp/b-pc/CMakeFiles/mi_template.dir/flags.make" ||
  fail "the pkg-config build did not take its include path from the prefix"

# A consumer asking for a future SDK major must be told no.
mkdir "$tmp/major2"
cat >"$tmp/major2/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.22)
project(major2 LANGUAGES C)
find_package(MetaInferSDK 2 REQUIRED)
CM
if cmake -S "$tmp/major2" -B "$tmp/b-major2" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null 2>&1; then
  fail "find_package(MetaInferSDK 2) accepted an ABI 1 SDK"
fi

for b in b-cmake b-pc; do
  so="$tmp/$b/plugins/libmi_template.so"
  [ -f "$so" ] && [ -f "$tmp/$b/plugins/template.mi-plugin" ] || fail "$b: plugin or manifest missing"
  exports_only_entry "$so"
  out=$("$MI_BUILD/bin/mi-host" --plugins "$tmp/$b/plugins" plugins 2>&1) ||
    fail "$b: mi-host plugins failed: $out"
  grep -q "^plugin template 1.0.0 (ABI 1.4" <<<"$out" || fail "$b: template not listed: $out"
  grep -q "device 0: template-cpu" <<<"$out" || fail "$b: template device not listed: $out"
  ! grep -q "^rejected" <<<"$out" || fail "$b: something was rejected: $out"
done

# The plugins built in-tree export only the entry too (no_entry exports nothing at all).
for so in "$MI_BUILD"/tests/plugins/*/lib*.so; do
  case "$so" in
    */garbage/* | */mixed/*) continue ;;
    */no_entry/*)
      [ -z "$(nm -D --defined-only "$so" | grep -v -E ' (_init|_fini)$' || true)" ] ||
        fail "$so exports symbols" ;;
    *) exports_only_entry "$so" ;;
  esac
done
echo "sdk_template: ok"
