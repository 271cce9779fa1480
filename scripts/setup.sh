#!/usr/bin/env bash
# Installs sparsetrain's system dependencies with apt (Debian 12). Idempotent: when every
# package is already installed it only checks and returns.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libdnnl-dev ocl-icd-opencl-dev   # oneDNN: dense GEMM baseline; its CMake config needs OpenCL
  libfmt-dev libcli11-dev nlohmann-json3-dev
  libpcre2-dev                     # regex parameter filters
  libyaml-cpp-dev                  # YAML sparsity configs
  libgtest-dev libbenchmark-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
