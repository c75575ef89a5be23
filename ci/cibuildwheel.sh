#!/usr/bin/env bash
# The steps cibuildwheel runs inside the manylinux_2_28 container for a release
# build ([tool.cibuildwheel] in pyproject.toml; `nox -s cibuildwheel -- VARIANT`).
# KERNFORGE_VARIANT (cpu, cu12, cu13) picks the variant from ci/matrix.toml.
#
#   ci/cibuildwheel.sh before-all          the variant's CUDA toolkit (dnf, NVIDIA's repository)
#   ci/cibuildwheel.sh before-build        the variant's torch and the build tools
#   ci/cibuildwheel.sh before-test         the same: the wheel is tested with that torch
#   ci/cibuildwheel.sh test PACKAGE_DIR    the CPU test suite against the built wheel
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VARIANT=${KERNFORGE_VARIANT:?set KERNFORGE_VARIANT to cpu, cu12 or cu13}
# The images carry every CPython under /opt/python; 3.12 reads TOML.
TOML_PY=${TOML_PY:-/opt/python/cp312-cp312/bin/python}

field() {  # field NAME: the variant's entry in ci/matrix.toml (empty if it has none)
  "$TOML_PY" -c 'import sys, tomllib
v = tomllib.load(open(sys.argv[1], "rb"))["variants"][sys.argv[2]]
print(v.get(sys.argv[3], ""))' "$ROOT/ci/matrix.toml" "$VARIANT" "$1"
}

case "${1:-}" in
  before-all)
    cuda=$(field cuda)
    [ -z "$cuda" ] && exit 0
    dnf install -y dnf-plugins-core
    dnf config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/repos/rhel8/x86_64/cuda-rhel8.repo
    v=${cuda/./-}
    dnf install -y "cuda-nvcc-$v" "cuda-cudart-devel-$v" "cuda-cccl-$v"
    ln -sfn "/usr/local/cuda-$cuda" /usr/local/cuda
    ;;
  before-build | before-test)
    python -m pip install "torch==$(field torch)" "setuptools>=77" wheel ninja
    ;;
  test)  # the built wheel is installed; the other two packages come from source (CPU build)
    package=$(basename "${2:?usage: ci/cibuildwheel.sh test PACKAGE_DIR}")
    python -m pip install "setuptools>=77" wheel ninja
    for other in kernforge-core kernforge-legacy kernforge; do
      if [ "$other" != "$package" ]; then
        KERNFORGE_CUDA=0 python -m pip install --no-build-isolation --no-deps "$ROOT/packages/$other"
      fi
    done
    cd "$ROOT" && python -m pytest tests -m "not cuda and not slow" -q -p no:cacheprovider
    ;;
  *)
    echo "usage: ci/cibuildwheel.sh before-all | before-build | test PACKAGE_DIR" >&2
    exit 2
    ;;
esac
