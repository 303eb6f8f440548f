#!/bin/bash
# setup.sh - installs the pinned onnxruntime-node into tools/ort/node_modules. The install
# scripts are skipped: the CPU runtime ships inside the npm package; the scripts only fetch
# optional GPU libraries.
set -euo pipefail
cd "$(dirname "$0")"
command -v npm >/dev/null || { echo "setup.sh: npm is not installed" >&2; exit 2; }
npm install --ignore-scripts --no-audit --no-fund
node -e "require('onnxruntime-node'); console.log('onnxruntime-node', require('onnxruntime-node/package.json').version, 'ready')"
