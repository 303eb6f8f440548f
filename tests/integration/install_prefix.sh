#!/usr/bin/env bash
# install_prefix.sh - `cmake --install BUILD --prefix P` installs the programs, libmetainfer,
# the plugins with their manifests, the SDK and the docs, and the installed programs find their
# plugins and mi-worker with no path options, also after the prefix is moved (issue 22,
# finding 9).
set -euo pipefail
: "${MI_BUILD:?}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "install_prefix: $*" >&2; exit 1; }
unset MI_PLUGIN_PATH

P=$T/prefix
cmake --install "$MI_BUILD" --prefix "$P" > "$T/install.log" 2>&1 || { cat "$T/install.log"; fail "cmake --install failed"; }

for f in bin/mi-host bin/mi-run bin/mi-conform bin/mi-zoo bin/mi-worker bin/mi-agent; do
  [ -x "$P/$f" ] || fail "$f is not installed"
done
plugdir=$(ls -d "$P"/lib*/metainfer/plugins 2>/dev/null | head -1)
[ -n "$plugdir" ] || fail "no lib*/metainfer/plugins under the prefix"
for m in "$MI_BUILD"/plugins/*.mi-plugin; do
  [ -f "$plugdir/$(basename "$m")" ] || fail "manifest $(basename "$m") is not installed"
  lib=$(sed -n 's/^library: *//p' "$m")
  [ -f "$plugdir/$lib" ] || fail "plugin library $lib is not installed"
done
ls "$P"/lib*/libmetainfer.a > /dev/null 2>&1 || fail "libmetainfer.a is not installed"
for h in mi.h mi_plugin.h mi_core.h; do
  [ -f "$P/include/metainfer/$h" ] || fail "include/metainfer/$h is not installed"
done
[ -f "$P/share/pkgconfig/metainfer-sdk.pc" ] || fail "the SDK's pkg-config file is not installed"
[ -f "$P/share/doc/metainfer/README.md" ] && [ -f "$P/share/doc/metainfer/abi.md" ] ||
  fail "the docs are not installed in share/doc/metainfer"

[ "$("$P/bin/mi-host" --version)" = "$("$MI_BUILD/bin/mi-host" --version)" ] ||
  fail "installed and built mi-host differ in --version"

# Run from elsewhere, with no path options: the programs look next to themselves.
check_prefix() {
  local p=$1
  (cd "$T" && "$p/bin/mi-host" plugins) > "$T/plugins.txt" 2> "$T/plugins.err" ||
    fail "$p/bin/mi-host plugins failed: $(cat "$T/plugins.err")"
  grep -q "^plugin blis-cpu " "$T/plugins.txt" || fail "$p/bin/mi-host plugins lists no blis-cpu"
  grep -q "^plugin npu-stub " "$T/plugins.txt" || fail "$p/bin/mi-host plugins lists no npu-stub"
  grep -q "path $p/" "$T/plugins.txt" || fail "$p/bin/mi-host plugins loaded plugins from elsewhere"
  grep -q "rejected" "$T/plugins.txt" && fail "$p/bin/mi-host plugins refused some: $(cat "$T/plugins.txt")"
  (cd "$T" && "$p/bin/mi-zoo" resnet --out "$T/models/r.onnx" --width 0.25 --depth 2 --resolution 32) \
    > /dev/null || fail "$p/bin/mi-zoo failed"
  for dev in blis-cpu:0 npu-stub:0; do
    (cd "$T" && "$p/bin/mi-run" --model "$T/models/r.onnx" --device "$dev") > "$T/run.txt" 2>&1 ||
      fail "$p/bin/mi-run on $dev failed: $(cat "$T/run.txt")"
    grep -q "^device: $dev" "$T/run.txt" || fail "mi-run did not run on $dev: $(cat "$T/run.txt")"
  done
  # a measurement in a worker: the installed mi-worker loads the installed plugins
  (cd "$T" && "$p/bin/mi-host" profile --model "$T/models/r.onnx" --device npu-stub:0 \
     --db "$T/h.db" --workers 1 --repeat 5 --no-fingerprint --json) > "$T/prof.json" 2> "$T/prof.err" ||
    fail "$p/bin/mi-host profile failed: $(cat "$T/prof.err")"
  grep -q '"failed":0' "$T/prof.json" || fail "profile from $p: $(head -c 400 "$T/prof.json")"
}
check_prefix "$P"
mv "$P" "$T/moved"
check_prefix "$T/moved"
echo "install_prefix: installed, and runs from $P and from a moved prefix"
