#!/usr/bin/env node
// join_chunks.js - joins a model that a package ships split into chunks (fetch.sh's
// INDEX.json#KEY paths): INDEX maps KEY to {size, chunks: [{hash, offsets: [begin, end]}]}, each
// chunk a file named by its hash next to INDEX. Writes the chunks to OUT in offset order; the
// ranges must tile the file from 0 without gaps or overlaps and end at the declared size.
// usage: node join_chunks.js INDEX.json KEY OUT    exit 2 with one line on stderr on any error
'use strict';
const fs = require('fs');
const path = require('path');

function join(index, key, out) {
  let e;
  try {
    e = JSON.parse(fs.readFileSync(index, 'utf8'))[key];
  } catch (err) {
    throw new Error(`${index}: ${String(err.message || err).split('\n')[0]}`);
  }
  if (!e || !Array.isArray(e.chunks) || e.chunks.length === 0) throw new Error(`${index}: no chunk list under '${key}'`);
  const cs = e.chunks.slice().sort((a, b) => a.offsets[0] - b.offsets[0]);
  const fd = fs.openSync(out, 'w');
  let at = 0;
  try {
    for (const c of cs) {
      if (typeof c.hash !== 'string' || !/^[0-9A-Za-z_.-]+$/.test(c.hash)) throw new Error(`'${key}': a chunk has no plain file name`);
      const b = fs.readFileSync(path.join(path.dirname(index), c.hash));
      if (c.offsets[0] !== at || c.offsets[1] - c.offsets[0] !== b.length) {
        throw new Error(`'${key}': chunk ${c.hash} covers [${c.offsets}] with ${b.length} bytes; expected it to start at ${at}`);
      }
      fs.writeSync(fd, b);
      at += b.length;
    }
  } finally {
    fs.closeSync(fd);
  }
  if (e.size !== undefined && e.size !== at) throw new Error(`'${key}': ${at} bytes joined, ${e.size} declared`);
}

const [index, key, out] = process.argv.slice(2);
try {
  if (!index || !key || !out) throw new Error('usage: join_chunks.js INDEX.json KEY OUT');
  join(index, key, out);
} catch (err) {
  process.stderr.write(`join_chunks: ${String(err.message || err).split('\n')[0]}\n`);
  process.exit(2);
}
