#!/usr/bin/env bash
# accuracy.sh - `mi-host accuracy`: text and --json reports, --calib with .npy files (one folder,
# and INPUT=DIR for a two-input model), --sensitivity, --tensors, an empty configuration, and usage errors.
set -euo pipefail
: "${MI_BUILD:?}"
host="$MI_BUILD/bin/mi-host"
zoo="$MI_BUILD/bin/mi-zoo"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "accuracy: $*" >&2; exit 1; }

expect_rc() { # expect_rc CODE CMD...
  local want=$1 rc=0
  shift
  "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" = "$want" ] || fail "'$*' exited $rc, wanted $want: $(cat "$tmp/err")"
}

"$zoo" kws --out "$tmp/kws.onnx" --width 0.5 --depth 2 --resolution 15 >/dev/null
cat >"$tmp/int8.yaml" <<'YAML'
passes: {fold_bn: true}
defaults: {weights: int8, scales: per_channel, activations: int8}
YAML

# Text, on deterministic random inputs: the report says they are not a dataset.
expect_rc 0 "$host" accuracy --model "$tmp/kws.onnx" --config "$tmp/int8.yaml" --samples 2
for want in "deterministic random data" "layers quantized" "calib " "held-out" "rel L2" \
            "top-1 agreement"; do
  grep -qF "$want" "$tmp/out" || fail "text report lacks '$want': $(cat "$tmp/out")"
done

# JSON, read by a real parser: figures in range, every activation quantized.
expect_rc 0 "$host" accuracy --model "$tmp/kws.onnx" --config "$tmp/int8.yaml" --samples 2 --json
python3 - "$tmp/out" <<'PY' || fail "JSON report: $(cat "$tmp/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["inputs"] == "deterministic random", r["inputs"]
assert len(r["config_hash"]) == 16
st = r["stats"]
assert st["bn_folded"] > 0 and st["quantized_layers"] > 0, st
assert st["quantized_activations"] > st["quantized_layers"], st  # pools, adds and the output too
for k in ("calibration", "held_out"):
    m = r[k]
    assert m["samples"] == 2, m
    assert 0 < m["rel_l2"] < 0.1 and 0.99 < m["cosine"] <= 1.0 + 1e-9, m
    assert 0 <= m["top1"] <= 1, m
PY

# --calib with .npy files: a folder of 3 files (2 calibrate, 1 held out).
python3 - "$tmp" <<'PY'
import struct, sys, random
def npy(path, shape, seed):
    random.seed(seed)
    n = 1
    for d in shape: n *= d
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join("%d," % d for d in shape)
    hdr += " " * (63 - (len(hdr) + 10) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack("<%df" % n, *[random.uniform(-1, 1) for _ in range(n)]))
import os
d = sys.argv[1]
os.makedirs(d + "/calib")
for i in range(3): npy("%s/calib/s%d.npy" % (d, i), (1, 1, 15, 10), i)
os.makedirs(d + "/bad")
npy(d + "/bad/s0.npy", (1, 1, 7, 10), 9)
# A two-input model written by hand (protobuf wire format): y = MatMul(Add(a, b), W).
def vint(v):
    out = b""
    while True:
        b = v & 0x7f; v >>= 7
        out += bytes([b | (0x80 if v else 0)])
        if not v: return out
def fld(num, data): return vint(num << 3 | 2) + vint(len(data)) + data
def num(n, v): return vint(n << 3) + vint(v)
def s(x): return x.encode()
def vi(name, dims):
    shape = b"".join(fld(1, num(1, d)) for d in dims)
    return fld(1, s(name)) + fld(2, fld(1, num(1, 1) + fld(2, shape)))
w = struct.pack("<12f", *[0.1 * (i - 6) for i in range(12)])
graph = (fld(1, fld(1, s("a")) + fld(1, s("b")) + fld(2, s("s")) + fld(3, s("add")) + fld(4, s("Add")))
         + fld(1, fld(1, s("s")) + fld(1, s("W")) + fld(2, s("y")) + fld(3, s("mm")) + fld(4, s("MatMul")))
         + fld(2, s("two"))
         + fld(5, num(1, 4) + num(1, 3) + num(2, 1) + fld(8, s("W")) + fld(9, w))
         + fld(11, vi("a", (1, 4))) + fld(11, vi("b", (1, 4))) + fld(12, vi("y", (1, 3))))
model = num(1, 8) + fld(7, graph) + fld(8, fld(1, b"") + num(2, 13))
open(d + "/two.onnx", "wb").write(model)
for name in ("a", "b"):
    os.makedirs("%s/two/%s" % (d, name))
    for i in range(2): npy("%s/two/%s/s%d.npy" % (d, name, i), (1, 4), 10 * i + len(name))
PY
expect_rc 0 "$host" accuracy --model "$tmp/kws.onnx" --config "$tmp/int8.yaml" --calib "$tmp/calib" --json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["inputs"].endswith("calib"); assert r["calibration"]["samples"]==2 and r["held_out"]["samples"]==1, r' "$tmp/out" \
  || fail "--calib split: $(cat "$tmp/out")"
expect_rc 2 "$host" accuracy --model "$tmp/kws.onnx" --config "$tmp/int8.yaml" --calib "$tmp/bad"
grep -q "does not match input" "$tmp/err" || fail "a wrong-shape .npy is not named: $(cat "$tmp/err")"

# A two-input model: one subfolder per input, or INPUT=DIR per input.
cat >"$tmp/mm.yaml" <<'YAML'
defaults: {weights: int8, activations: int8}
YAML
expect_rc 0 "$host" accuracy --model "$tmp/two.onnx" --config "$tmp/mm.yaml" --calib "$tmp/two" --json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["stats"]["quantized_layers"]==1 and r["calibration"]["samples"]==1, r' "$tmp/out" \
  || fail "two-input --calib DIR: $(cat "$tmp/out")"
expect_rc 0 "$host" accuracy --model "$tmp/two.onnx" --config "$tmp/mm.yaml" --calib "b=$tmp/two/b" --calib "a=$tmp/two/a"
grep -q "rel L2" "$tmp/out" || fail "two-input --calib NAME=DIR: $(cat "$tmp/out")"
expect_rc 2 "$host" accuracy --model "$tmp/two.onnx" --config "$tmp/mm.yaml" --calib "a=$tmp/two/a"
grep -q "no files for input 'b'" "$tmp/err" || fail "a missing input folder is not named: $(cat "$tmp/err")"
expect_rc 2 "$host" accuracy --model "$tmp/two.onnx" --config "$tmp/mm.yaml" --calib "$tmp/calib"
grep -q "subfolder 'a'" "$tmp/err" || fail "a flat folder for two inputs is not explained: $(cat "$tmp/err")"

# --sensitivity: one line per weighted layer.
expect_rc 0 "$host" accuracy --model "$tmp/kws.onnx" --config "$tmp/int8.yaml" --samples 1 --sensitivity --json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); s=r["sensitivity"]; assert len(s)>=3 and all(x["metrics"]["rel_l2"]>0 for x in s), s' "$tmp/out" \
  || fail "sensitivity: $(cat "$tmp/out")"

# --tensors: every shared float tensor, in node order; an INT8 model has quantized activations
# with their own rounding, the text form prints the header.
expect_rc 0 "$host" accuracy --model "$tmp/kws.onnx" --config "$tmp/int8.yaml" --samples 1 --tensors --json
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tensors"]; q=[x for x in t if x["quantized"]]; assert len(t)>=3 and q and all(x["own_rel_l2"]>0 for x in q) and any(x["rel_l2"]>0 for x in t), t' "$tmp/out" \
  || fail "tensors: $(cat "$tmp/out")"
expect_rc 0 "$host" accuracy --model "$tmp/kws.onnx" --config "$tmp/int8.yaml" --samples 1 --tensors
grep -q "per tensor" "$tmp/out" || fail "tensors text: $(cat "$tmp/out")"

# An empty configuration is no transform at all: the model is unchanged.
: >"$tmp/empty.yaml"
expect_rc 0 "$host" accuracy --model "$tmp/kws.onnx" --config "$tmp/empty.yaml" --samples 1 --json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["held_out"]["rel_l2"]==0 and r["stats"]["quantized_layers"]==0, r' "$tmp/out" \
  || fail "empty config: $(cat "$tmp/out")"

# Bad configurations and arguments: exit 2 with FILE:LINE:COLUMN.
printf 'defaults:\n  weights: int7\n' >"$tmp/bad.yaml"
expect_rc 2 "$host" accuracy --model "$tmp/kws.onnx" --config "$tmp/bad.yaml"
grep -q "bad.yaml:2:12: weights" "$tmp/err" || fail "bad config not located: $(cat "$tmp/err")"
printf 'layers:\n  nosuch.conv: {weights: int8}\n' >"$tmp/bad2.yaml"
expect_rc 2 "$host" accuracy --model "$tmp/kws.onnx" --config "$tmp/bad2.yaml"
grep -q "nosuch.conv" "$tmp/err" || fail "unknown layer not named: $(cat "$tmp/err")"
expect_rc 2 "$host" accuracy --model "$tmp/kws.onnx"
expect_rc 2 "$host" accuracy --model "$tmp/kws.onnx" --config "$tmp/int8.yaml" --samples 0
echo "accuracy: ok"
