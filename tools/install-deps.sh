#!/usr/bin/env bash
# Installs the Debian 12 packages Meta Infer builds and tests with; installs only what is missing.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config clang libclang-rt-14-dev clang-format
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev
  libsqlite3-dev libyaml-dev
  libblis-dev libblis-pthread-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  libvulkan-dev mesa-vulkan-drivers glslc vulkan-tools
  python3
  libxgboost-dev liblapacke-dev liblapack-dev
  # tests/report: headless Chromium renders report.html (with a font for its text), xmllint parses its SVGs
  chromium fonts-dejavu-core libxml2-utils
  postgresql libpq-dev libssl-dev iproute2
  # tools/models/calib.sh (real-input calibration folders, tests/integration/calib_real.sh):
  # numpy and PIL, speech from espeak-ng (about 10 MB together; the photographs come from
  # python3-skimage's .deb on demand, calib.sh --fetch-photos, not installed here)
  python3-numpy python3-pil espeak-ng
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

echo "install-deps: missing: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=sudo
  else
    echo "install-deps: not root; run as root:" >&2
    echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${#missing[@]} package(s)"
