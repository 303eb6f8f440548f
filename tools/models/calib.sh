#!/bin/bash
# calib.sh - real-input calibration folders for the fetched real models: runs calib.py (its
# docstring says what each model gets) with a python3 that has numpy and PIL (python3-numpy,
# python3-pil: the PATH's python3 first, then Debian's /usr/bin/python3).
#
# usage: tools/models/calib.sh [--out DIR] [--only REGEX] [--count N] [--seed S] [--photos DIR]
#          [--fetch-photos] [--build DIR] [--models DIR]      (calib.py --help)
# Default OUT ~/.cache/metainfer/calib; then tools/bench/tune_real.sh BUILD OUT --calib OUT
# or a recipe's `calibration: OUT/NAME`.
here=$(dirname "$0")
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import numpy, PIL' 2>/dev/null; then
    exec "$py" "$here/calib.py" "$@"
  fi
done
echo "calib.sh: no python3 with numpy and PIL: apt-get install python3-numpy python3-pil" >&2
exit 2
