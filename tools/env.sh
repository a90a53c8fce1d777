# Sourced by the build scripts: compiler cache shared between clones, and the
# CUDA toolkit when present.
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.ccache}"
export CCACHE_BASEDIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
  MAGMADNN_WITH_CUDA=ON
else
  MAGMADNN_WITH_CUDA=OFF
fi
# OpenMPI refuses to run as root without these; tests start ranks on this machine only.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# More ranks than cores: Open MPI 4 (ORTE) reads the first variable; Open MPI
# 5 (PRRTE) ignores it without a word and reads the second.
export OMPI_MCA_rmaps_base_oversubscribe=1
export PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe
# Open MPI 5.0 (Debian 13) prints "Unable to find reachable pairing between
# local and remote interfaces" from its TCP transport at every start on this
# kind of machine (eth0 with an IPv4, a ULA and a link-local IPv6 address);
# Open MPI 4.1 does not. The ranks of the tests all run on this machine, where
# shared memory carries the traffic, so TCP is kept to loopback, which it
# pairs without a word. tools/mpi-netns-run.sh names its own interfaces.
export OMPI_MCA_btl_tcp_if_include=lo
# The Python package's build environment (tools/install-deps.sh --tests makes
# it): its interpreter, with nanobind, is the one CMake builds the module for.
export MAGMADNN_PYENV="${MAGMADNN_PYENV:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build-pyenv}"
# Key the cache on the compiler's content, not its timestamp, so the bare
# Debian root of tools/check-fresh-machine.sh shares it with this machine.
export CCACHE_COMPILERCHECK=content
