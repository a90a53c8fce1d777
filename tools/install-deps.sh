#!/usr/bin/env bash
# Installs the Debian 12 packages magmadnn needs, only if missing (idempotent).
# CUDA is not installed here: it is used when /usr/local/cuda/bin/nvcc exists.
set -euo pipefail
PKGS=(build-essential cmake ninja-build ccache pkg-config libdnnl-dev libopenblas-dev libfftw3-dev
      libopenmpi-dev openmpi-bin libgtest-dev zlib1g-dev nlohmann-json3-dev dataset-fashion-mnist)
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
