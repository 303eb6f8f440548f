#!/usr/bin/env node
// decode_loop.js - the peer of tools/bench/real/decode_loop.c on ONNX Runtime's CPU provider:
// a merged decoder's cached step at cache lengths P..P+N-1 through one session, the
// self-attention caches ("*.decoder.*", [1, H, L, D]) grown by repeating the calibration
// sample's positions. Prints each token's first run and the median of --warm more runs.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const NPY = { '<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array], '|b1': ['bool', Uint8Array],
  '|u1': ['uint8', Uint8Array], '<i4': ['int32', Int32Array] };

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const off = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', off, off + hlen);
  const t = NPY[/'descr':\s*'([^']+)'/.exec(header)[1]];
  const dims = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim())
    .filter((s) => s.length).map(Number);
  const body = buf.subarray(off + hlen);
  return { type: t[0], ctor: t[1], dims,
    data: new t[1](body.buffer.slice(body.byteOffset, body.byteOffset + body.length)) };
}

function grown(a, len) {
  const [b, h, l, d] = a.dims;
  const out = new a.ctor(b * h * len * d);
  for (let r = 0; r < b * h; r++)
    for (let p = 0; p < len; p++)
      out.set(a.data.subarray((r * l + (p % l)) * d, (r * l + (p % l) + 1) * d), (r * len + p) * d);
  return new ort.Tensor(a.type, out, [b, h, len, d]);
}

async function main() {
  const o = { from: 8, tokens: 32, warm: 0, threads: 0, sample: 0 };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, ''), v = argv[i + 1];
    if (v === undefined || !['model', 'calib', 'from', 'tokens', 'warm', 'threads', 'sample'].includes(k)) {
      process.stderr.write('usage: node decode_loop.js --model M.onnx --calib DIR [--sample N] [--from P] ' +
        '[--tokens N] [--warm N] [--threads N]\n');
      process.exit(2);
    }
    o[k] = ['model', 'calib'].includes(k) ? v : Number(v);
  }
  const so = { executionProviders: ['cpu'], graphOptimizationLevel: 'all' };
  if (o.threads) { so.intraOpNumThreads = o.threads; so.interOpNumThreads = 1; }
  const sess = await ort.InferenceSession.create(o.model, so);
  const base = {};
  for (const name of sess.inputNames) base[name] = readNpy(path.join(o.calib, name, `${o.sample}.npy`));
  console.log('cache_len,ms,warm_median_ms');
  for (let p = o.from; p < o.from + o.tokens; p++) {
    const feeds = {};
    for (const name of sess.inputNames) {
      const a = base[name];
      feeds[name] = name.includes('.decoder.') && a.dims.length === 4 ? grown(a, p)
        : new ort.Tensor(a.type, a.data, a.dims);
    }
    let t0 = process.hrtime.bigint();
    await sess.run(feeds);
    const first = Number(process.hrtime.bigint() - t0) / 1e6;
    const w = [];
    for (let i = 0; i < o.warm; i++) {
      t0 = process.hrtime.bigint();
      await sess.run(feeds);
      w.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    w.sort((x, y) => x - y);
    console.log(`${p},${first.toFixed(3)},${w.length ? w[w.length >> 1].toFixed(3) : '0.000'}`);
  }
}

main().catch((e) => { process.stderr.write(`decode_loop: ${e.message}\n`); process.exit(1); });
