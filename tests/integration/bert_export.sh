#!/usr/bin/env bash
# bert_export.sh - a BERT-family text encoder as torch.onnx exports Hugging Face's BertModel
# (tools/models/bert_like.py at a small size: 2 layers, hidden 32, 4 heads, a 500-word vocabulary)
# runs wholly on blis-cpu: int64 input_ids / attention_mask / token_type_ids at symbolic dims, the
# mask's Unsqueeze/Cast on the device (no host step), and its output within 1e-5 (relative L2) of
# the reference interpreter's, with a padded row in the mask.
set -euo pipefail
source "$(dirname "$0")/lib.bash"
fail() { echo "bert_export: $*" >&2; exit 1; }
SRC=${MI_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
python3 "$SRC/tools/models/bert_like.py" "$T/bert.onnx" --layers 2 --hidden 32 --heads 4 --mlp 64 --vocab 500 \
  >/dev/null || fail "bert_like.py failed"
mi_wire_py
# batch 2 of 9 tokens: ids in the vocabulary, the second row padded after 5 tokens, one segment
python3 - "$T" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[1]); from mi_wire import *
ids = [101, 7, 300, 42, 499, 8, 17, 256, 102, 101, 60, 61, 62, 102, 0, 0, 0, 0]
mask = [1] * 9 + [1] * 5 + [0] * 4
for name, vals in (("ids", ids), ("mask", mask), ("types", [0] * 18)):
    save(name + ".npy", npy("<i8", (2, 9), struct.pack("<18q", *vals)))
PY
A=(--input "input_ids=$T/ids.npy" --input "attention_mask=$T/mask.npy" --input "token_type_ids=$T/types.npy")
"$RUN" --model "$T/bert.onnx" --device ref "${A[@]}" --output-dir "$T/ref" >/dev/null || fail "reference run failed"
"$RUN" --plugins "$B/plugins" --model "$T/bert.onnx" --device blis-cpu:0 "${A[@]}" --output-dir "$T/blis" \
  >"$T/blis.txt" 2>&1 || fail "blis-cpu run failed: $(tail -3 "$T/blis.txt")"
grep -q "fallback nodes: none" "$T/blis.txt" || fail "nodes ran on the host: $(grep fallback "$T/blis.txt")"
grep -q "output 'last_hidden_state': float32 \[2,9,32\]" "$T/blis.txt" ||
  fail "output shape: $(grep "output 'last_hidden_state'" "$T/blis.txt")"
e=$(rel_l2 "$T/blis/last_hidden_state.npy" "$T/ref/last_hidden_state.npy")
echo "rel L2 $e"
under "$e" 9.99e-6 || fail "blis-cpu's output differs from the reference's (rel L2 $e)"
echo "bert_export: ok"
