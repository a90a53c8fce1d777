#!/usr/bin/env bash
# Installs the Debian packages magmadnn needs, only if missing (idempotent).
# The same names on Debian 12 (bookworm) and Debian 13 (trixie).
#   tools/install-deps.sh           what building and running needs
#   tools/install-deps.sh --tests   and what the tests need besides, with the
#                                   Python package's build environment (below)
# CUDA is not installed here: it is used when /usr/local/cuda/bin/nvcc exists.
# tools/check-fresh-machine.sh proves this list complete on a bare Debian 12
# and on a bare Debian 13.
set -euo pipefail
# ocl-icd-opencl-dev: Debian's dnnl-config.cmake calls find_package(OpenCL),
#   but libdnnl-dev only recommends it (and we install without recommends).
# libgtest-dev, libgmock-dev: configuring looks for them (tests are on by
#   default); gmock/gmock.h is not in libgtest-dev.
# libturbojpeg0-dev, libpng-dev: JPEG and PNG image folders ("dataset": "folder");
#   optional at configure time, but installed so the build has them.
# libonnx-dev, libprotobuf-dev: ONNX export and import (magmadnn_onnx, `magmadnn
#   export`/`import`); optional at configure time, but installed so the build has them.
# python3: configuring runs tests/docs/doc_snippets.py (tests are on by
#   default, so run-main.sh's configure needs it too).
PKGS=(build-essential cmake ninja-build ccache pkg-config git libdnnl-dev ocl-icd-opencl-dev
      libopenblas-dev libfftw3-dev libopenmpi-dev openmpi-bin zlib1g-dev nlohmann-json3-dev
      libturbojpeg0-dev libpng-dev libonnx-dev libprotobuf-dev libgtest-dev libgmock-dev dataset-fashion-mnist python3)
if [[ "${1:-}" == "--tests" ]]; then
  # python3 (above) also runs the v1 example checker. clang: the API forms are compiled by
  # both compilers. chromium, poppler-utils, fonts: the report is rendered
  # and read back. iproute2: tests/netns puts ranks in network namespaces.
  # python3-dev, python3-venv, python3-numpy, python3-pytest: the Python
  # package (python/) and its pytest suite (tests/python); nanobind and
  # scikit-build-core, which Debian 12 lacks, come from PyPI into a virtual
  # environment made here (see the end of this file); ca-certificates: pip
  # reaches PyPI over HTTPS. libonnx-testdata: the ONNX node tests
  # (tests/onnx); the ONNX Runtime round trip installs onnxruntime from PyPI
  # into a virtual environment too (python3-venv). slurm-wlm, munge: the
  # tests/slurm cases start a one-node Slurm of their own (tools/slurm-local.sh).
  # python3-mpi4py: tests/python trains after mpi4py has started MPI.
  PKGS+=(clang chromium poppler-utils fonts-dejavu-core iproute2
         python3-dev python3-venv python3-numpy python3-pytest ca-certificates libonnx-testdata
         slurm-wlm munge python3-mpi4py)
elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--tests]" >&2
  exit 2
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[magmadnn] installing: ${missing[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Python package's build environment: a virtual environment that sees
# Debian's numpy and pytest (--system-site-packages) and holds nanobind and
# scikit-build-core from PyPI at the versions of python/requirements-build.txt.
# The build scripts hand its interpreter to CMake (tools/env.sh,
# MAGMADNN_PYENV; build-pyenv/ beside the build folder by default).
if [[ "${1:-}" == "--tests" ]]; then
  source "$(dirname "$0")/env.sh"
  REQS="$(cd "$(dirname "$0")/.." && pwd)/python/requirements-build.txt"
  if ! "$MAGMADNN_PYENV/bin/python" -c "import nanobind, scikit_build_core" 2>/dev/null ||
     ! cmp -s "$REQS" "$MAGMADNN_PYENV/requirements-build.txt"; then
    echo "[magmadnn] making the Python build environment $MAGMADNN_PYENV"
    /usr/bin/python3 -m venv --system-site-packages "$MAGMADNN_PYENV"
    "$MAGMADNN_PYENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQS"
    cp "$REQS" "$MAGMADNN_PYENV/requirements-build.txt"
  fi
fi
