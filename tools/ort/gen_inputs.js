#!/usr/bin/env node
// gen_inputs.js - writes deterministic random .npy inputs for a model (names, dtypes and
// shapes read through ONNX Runtime), so that mi-run and ort_run.js see the same data.
// usage: node gen_inputs.js MODEL.onnx OUTDIR [--image] [NAME=D0,D1,...]...   prints NAME=FILE
// --image fills 4-D float inputs with a normalised synthetic page (dark text-like strokes on a
// light background) instead of noise, so detectors give non-trivial maps; NCHW, or NHWC where
// the last dim is at most 4 (channels-last tf2onnx exports).
// --value NAME=V fills input NAME with V everywhere (Silero VAD's sample rate `sr`; a bool input
// is true for V != 0: a merged decoder's `use_cache_branch`).
// --int NAME=LO,HI fills an integer input NAME with deterministic random values in [LO, HI]
// (token ids within a text encoder's vocabulary).
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function npyBytes(descr, dims, data) {
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`; // () for a scalar
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre.writeUInt16LE(header.length, 8);
  return Buffer.concat([pre, Buffer.from(header, 'latin1'), Buffer.from(data.buffer, data.byteOffset, data.byteLength)]);
}

// float32 values to float16 bits, rounded to nearest even (a half-precision model's inputs).
function toHalf(f) {
  const u = new Uint32Array(f.buffer, f.byteOffset, f.length), h = new Uint16Array(f.length);
  for (let i = 0; i < f.length; i++) {
    const x = u[i], sign = (x >>> 16) & 0x8000, e = (x >>> 23) & 0xff, m = x & 0x7fffff;
    if (e === 0xff) { h[i] = sign | 0x7c00 | (m ? 0x200 : 0); continue; }
    const he = e - 112; // the half exponent field
    if (he >= 31) { h[i] = sign | 0x7c00; continue; }
    let mant = m | 0x800000, shift = he > 0 ? 13 : 14 - he; // subnormals shift further
    if (shift > 24) { h[i] = sign; continue; }
    let v = (he > 0 ? (he << 10) : 0) + ((mant >>> shift) & (he > 0 ? 0x3ff : 0x7ff));
    const rest = mant & ((1 << shift) - 1), half = 1 << (shift - 1);
    if (rest > half || (rest === half && (v & 1))) v++; // a carry into the exponent is right too
    h[i] = sign | v;
  }
  return h;
}

async function main() {
  let [model, outDir, ...specs] = process.argv.slice(2);
  const image = specs.includes('--image');
  specs = specs.filter((x) => x !== '--image');
  const values = {};
  for (let k = specs.indexOf('--value'); k >= 0; k = specs.indexOf('--value')) {
    const [n, v] = (specs[k + 1] || '').split('=');
    if (!n || v === undefined) throw new Error('--value expects NAME=V');
    values[n] = Number(v);
    specs.splice(k, 2);
  }
  const ranges = {};
  for (let k = specs.indexOf('--int'); k >= 0; k = specs.indexOf('--int')) {
    const [n, r] = (specs[k + 1] || '').split('=');
    const [lo, hi] = (r || '').split(',').map(Number);
    if (!n || !Number.isInteger(lo) || !Number.isInteger(hi) || hi < lo) throw new Error('--int expects NAME=LO,HI');
    ranges[n] = [lo, hi];
    specs.splice(k, 2);
  }
  if (!model || !outDir) throw new Error('usage: gen_inputs.js MODEL.onnx OUTDIR [NAME=D0,D1,...]...');
  const fixed = {};
  for (const s of specs) {
    const eq = s.indexOf('=');
    if (eq <= 0) throw new Error(`'${s}': expected NAME=D0,D1,...`);
    fixed[s.slice(0, eq)] = s.slice(eq + 1).split(',').filter((x) => x.length).map(Number);
  }
  const sess = await ort.InferenceSession.create(model);
  fs.mkdirSync(outDir, { recursive: true });
  let seed = 12345;
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  sess.inputNames.forEach((name, i) => {
    const meta = Array.isArray(sess.inputMetadata) ? sess.inputMetadata[i] : {};
    const dims = fixed[name] || (meta.shape || []).map((d) => (typeof d === 'number' && d >= 0 ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    let buf;
    const v = values[name];
    const rg = ranges[name];
    const ri = () => rg[0] + Math.min(rg[1] - rg[0], Math.floor(rnd() * (rg[1] - rg[0] + 1)));
    if (rg && meta.type !== 'int64' && meta.type !== 'int32') throw new Error(`--int ${name}: not an int32/int64 input`);
    if (meta.type === 'int64') {
      const d = new BigInt64Array(n); if (v !== undefined) d.fill(BigInt(v));
      if (rg) for (let k = 0; k < n; k++) d[k] = BigInt(ri());
      buf = npyBytes('<i8', dims, d);
    } else if (meta.type === 'bool') {
      const d = new Uint8Array(n); if (v !== undefined) d.fill(v ? 1 : 0); buf = npyBytes('|b1', dims, d);
    } else if (meta.type === 'int32') {
      const d = new Int32Array(n); if (v !== undefined) d.fill(v);
      if (rg) for (let k = 0; k < n; k++) d[k] = ri();
      buf = npyBytes('<i4', dims, d);
    } else if (meta.type === 'int16') { // 16-bit PCM: noise over a third of the range
      const d = new Int16Array(n);
      for (let k = 0; k < n; k++) d[k] = v !== undefined ? v : Math.round((rnd() * 2 - 1) * 10000);
      buf = npyBytes('<i2', dims, d);
    } else if (meta.type === 'uint16' || meta.type === 'uint32') {
      const d = meta.type === 'uint16' ? new Uint16Array(n) : new Uint32Array(n); if (v !== undefined) d.fill(v);
      buf = npyBytes(meta.type === 'uint16' ? '<u2' : '<u4', dims, d);
    } else if (meta.type === 'uint64') {
      const d = new BigUint64Array(n); if (v !== undefined) d.fill(BigInt(v)); buf = npyBytes('<u8', dims, d);
    } else {
      const d = new Float32Array(n);
      for (let k = 0; k < n; k++) d[k] = v !== undefined ? v : rnd() * 2 - 1;
      if (image && dims.length === 4) {
        // Channels-last (tf2onnx) when the last dim looks like colour channels.
        const nhwc = dims[3] <= 4 && dims[1] > 4;
        const [h, w, c] = nhwc ? [dims[1], dims[2], dims[3]] : [dims[2], dims[3], 1];
        for (let k = 0; k < n; k++) {
          const p = Math.floor(k / c);
          const x = p % w, y = Math.floor(p / w) % h;
          // Rows of "words": strokes 2 px wide every 5 px, in bands 12 px high.
          const ink = (y % 24) >= 6 && (y % 24) < 18 && (x % 5) < 2 && (Math.floor(x / 20) % 3) !== 2;
          const v = (ink ? 0.1 : 0.9) + 0.05 * (rnd() - 0.5);
          d[k] = (v - 0.5) / 0.5; // PaddleOCR normalisation: mean 0.5, std 0.5
        }
      }
      buf = meta.type === 'float16' ? npyBytes('<f2', dims, toHalf(d)) : npyBytes('<f4', dims, d);
    }
    const f = path.join(outDir, `in${i}.npy`);
    fs.writeFileSync(f, buf);
    process.stdout.write(`${name}=${f}\n`);
  });
}

main().catch((e) => { process.stderr.write(`gen_inputs: ${String(e.message || e).split('\n')[0]}\n`); process.exit(2); });
