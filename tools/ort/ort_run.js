#!/usr/bin/env node
// ort_run.js - runs an ONNX model on ONNX Runtime's CPU provider: inputs from .npy files
// (or zeros for inputs not given, dynamic dims as 1), outputs as .npy, and latency
// median/p10/p90 over --repeat runs after --warmup runs. The peer of `mi-run` for comparisons
// and benchmarks.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

function usage(code) {
  process.stderr.write('usage: node ort_run.js --model M.onnx [--input NAME=FILE.npy]... ' +
    '[--output-dir DIR] [--threads N] [--repeat N] [--warmup N] [--gap MS] [--json]\n' +
    '       [--opt disabled|basic|extended|all]  (graph optimization level; default all)\n' +
    '       [--profile FILE.json]  (ONNX Runtime\'s own per-node trace of the timed runs)\n');
  process.exit(code);
}

function parseArgs(argv) {
  const o = { inputs: [], repeat: 1, warmup: 0, threads: 0, gap: 0, json: false, opt: 'all' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    const int = (min) => {
      const v = val();
      if (!/^\d+$/.test(v) || Number(v) < min) throw new Error(`${a}: '${v}' is not an integer >= ${min}`);
      return Number(v);
    };
    if (a === '--model') o.model = val();
    else if (a === '--input') o.inputs.push(val());
    else if (a === '--output-dir') o.outputDir = val();
    else if (a === '--threads') o.threads = int(1);
    else if (a === '--opt') {
      o.opt = val();
      if (!['disabled', 'basic', 'extended', 'all'].includes(o.opt)) throw new Error(`--opt: '${o.opt}' is not disabled, basic, extended or all`);
    }
    else if (a === '--repeat') o.repeat = int(1);
    else if (a === '--warmup') o.warmup = int(0);
    else if (a === '--gap') { // idle ms before each run (a streaming caller), as mi-run --gap
      const v = val();
      if (!/^\d+(\.\d+)?$/.test(v)) throw new Error(`${a}: '${v}' is not a number of milliseconds >= 0`);
      o.gap = Number(v);
    } else if (a === '--json') o.json = true;
    else if (a === '--profile') o.profile = val();
    else if (a === '--help' || a === '-h') usage(0);
    else throw new Error(`unknown option '${a}'`);
  }
  if (!o.model) throw new Error('--model is required');
  return o;
}

// .npy v1/v2 reader and v1 writer for the dtypes models use (float16 as its bits, as onnxruntime-node
// holds it).
const NPY_TYPES = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<f2': ['float16', Uint16Array],
  '<i8': ['int64', BigInt64Array], '<i4': ['int32', Int32Array], '|i1': ['int8', Int8Array],
  '|u1': ['uint8', Uint8Array], '|b1': ['bool', Uint8Array], '<u8': ['uint64', BigUint64Array],
  '<i2': ['int16', Int16Array], '<u2': ['uint16', Uint16Array], '<u4': ['uint32', Uint32Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const off = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', off, off + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !shape || /'fortran_order':\s*True/.test(header)) throw new Error(`${file}: unsupported .npy header`);
  const t = NPY_TYPES[descr[1]];
  if (!t) throw new Error(`${file}: unsupported dtype ${descr[1]}`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const body = buf.subarray(off + hlen);
  const data = new t[1](body.buffer.slice(body.byteOffset, body.byteOffset + body.length));
  return new ort.Tensor(t[0], data, dims);
}

function writeNpy(file, tensor) {
  const entry = Object.entries(NPY_TYPES).find(([, v]) => v[0] === tensor.type);
  if (!entry) throw new Error(`output type ${tensor.type} cannot be written as .npy`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${entry[0]}', 'fortran_order': False, 'shape': ${shape}, }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const d = tensor.data;
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'),
    Buffer.from(d.buffer, d.byteOffset, d.byteLength)]));
}

function zeros(meta) {
  const dims = (meta.shape || []).map((d) => (typeof d === 'number' && d >= 0 ? d : 1));
  const n = dims.reduce((a, b) => a * b, 1);
  const ctor = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array, bool: Uint8Array,
    uint8: Uint8Array, int8: Int8Array, float64: Float64Array, float16: Uint16Array, int16: Int16Array,
    uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array }[meta.type] || Float32Array;
  return new ort.Tensor(meta.type || 'float32', new ctor(n), dims);
}

function pct(sorted, p) {
  const k = (sorted.length - 1) * p;
  const lo = Math.floor(k), hi = Math.ceil(k);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (k - lo);
}

// Whether a thread of this process ran AVX-512 code in the last `ms` milliseconds, by the
// kernel's record (x86 Linux: /proc/self/task/TID/arch_status, AVX512_elapsed_ms, -1 for never;
// recorded when a thread is switched out): true, false, or null where there is no record.
function avx512Within(ms) {
  let used = false;
  try {
    for (const tid of fs.readdirSync('/proc/self/task')) {
      const m = /AVX512_elapsed_ms:\s*(-?\d+)/.exec(fs.readFileSync(`/proc/self/task/${tid}/arch_status`, 'utf8'));
      if (!m) return null;
      const v = Number(m[1]);
      if (v >= 0 && v <= ms) used = true;
    }
  } catch (e) {
    return null;
  }
  return used;
}

async function main() {
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`ort_run: ${e.message}\n`);
    usage(2);
  }
  const so = { executionProviders: ['cpu'], graphOptimizationLevel: o.opt };
  if (o.threads) { so.intraOpNumThreads = o.threads; so.interOpNumThreads = 1; }
  if (o.profile) { so.enableProfiling = true; so.profileFilePrefix = `${o.profile}.ort`; }
  const sess = await ort.InferenceSession.create(o.model, so);
  const feeds = {};
  for (const spec of o.inputs) {
    const eq = spec.indexOf('=');
    if (eq <= 0) throw new Error(`--input '${spec}': expected NAME=FILE.npy`);
    const name = spec.slice(0, eq);
    if (!sess.inputNames.includes(name)) throw new Error(`--input '${name}': the model has no such input`);
    feeds[name] = readNpy(spec.slice(eq + 1));
  }
  const meta = sess.inputMetadata || [];
  sess.inputNames.forEach((name, i) => {
    if (!feeds[name]) feeds[name] = zeros(Array.isArray(meta) ? meta[i] || {} : meta[name] || {});
  });
  let out;
  const idle = () => (o.gap > 0 ? new Promise((r) => setTimeout(r, o.gap)) : null);
  for (let i = 0; i < o.warmup; i++) {
    await idle();
    out = await sess.run(feeds);
  }
  const lat = [], cpu = [];
  const timed0 = process.hrtime.bigint();
  for (let i = 0; i < o.repeat; i++) {
    await idle();
    // process.cpuUsage: the whole process's CPU time (every thread), the peer of mi-run's cpu_ms
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    out = await sess.run(feeds);
    lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1e3);
  }
  const avx512 = avx512Within(Number(process.hrtime.bigint() - timed0) / 1e6);
  if (o.profile) {
    // ONNX Runtime names the trace itself (prefix + date) and returns no name here: take the
    // newest file with the prefix and move it where the caller asked.
    sess.endProfiling();
    const dir = path.dirname(path.resolve(o.profile)), base = `${path.basename(o.profile)}.ort_`;
    const traces = fs.readdirSync(dir).filter((f) => f.startsWith(base) && f.endsWith('.json'))
      .map((f) => path.join(dir, f)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
    if (!traces.length) throw new Error(`--profile: ONNX Runtime wrote no trace next to ${o.profile}`);
    fs.renameSync(traces[0], o.profile);
    for (const t of traces.slice(1)) fs.unlinkSync(t);
  }
  const files = {};
  if (o.outputDir) {
    fs.mkdirSync(o.outputDir, { recursive: true });
    for (const name of sess.outputNames) {
      const f = path.join(o.outputDir, `${name.replace(/[^A-Za-z0-9_.-]/g, '_')}.npy`);
      writeNpy(f, out[name]);
      files[name] = f;
    }
  }
  const sorted = lat.slice().sort((a, b) => a - b);
  const csorted = cpu.slice().sort((a, b) => a - b);
  const res = {
    model: o.model, runtime: 'onnxruntime-node', version: require('onnxruntime-node/package.json').version,
    provider: 'cpu', threads: o.threads || null, warmup: o.warmup, repeat: o.repeat, gap_ms: o.gap,
    latency_ms: { median: pct(sorted, 0.5), p10: pct(sorted, 0.1), p90: pct(sorted, 0.9) },
    cpu_ms: { median: pct(csorted, 0.5), p10: pct(csorted, 0.1), p90: pct(csorted, 0.9) },
    avx512_in_timed_runs: avx512,
    outputs: sess.outputNames.map((n) => ({ name: n, dtype: out[n].type, shape: out[n].dims, file: files[n] || null })),
  };
  if (o.json) process.stdout.write(JSON.stringify(res) + '\n');
  else {
    for (const r of res.outputs) process.stdout.write(`output '${r.name}': ${r.dtype} [${r.shape.join(',')}]${r.file ? ' -> ' + r.file : ''}\n`);
    const l = res.latency_ms;
    process.stdout.write(`latency (ms): median ${l.median.toFixed(4)}  p10 ${l.p10.toFixed(4)}  p90 ${l.p90.toFixed(4)}  (${o.repeat} runs after ${o.warmup} warm-up)\n`);
  }
}

main().catch((e) => {
  process.stderr.write(`ort_run: ${String(e && e.message ? e.message : e).split('\n')[0]}\n`);
  process.exit(2);
});
