#!/usr/bin/env bash
# One Slurm test case (tests/slurm/slurm_cases.sh) against a Slurm cluster of
# its own: tools/slurm-local.sh starts slurmctld, slurmd and munged under a
# fresh folder, the case runs, and the daemons stop whatever happened.
#   run_slurm_case.sh CASE MAGMADNN
# Exit status 77 (skipped) without root, Slurm, munge or Fashion-MNIST.
set -uo pipefail
case_name="$1" magmadnn="$2"
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
data=/usr/share/datasets/fashion-mnist
[[ -f $data/train-images-idx3-ubyte.gz ]] || { echo "SKIP: $data is not installed"; exit 77; }
work="$(mktemp -d "${TMPDIR:-/tmp}/slurm_case.XXXXXX")"
cleanup() {
  "$root/tools/slurm-local.sh" stop "$work/cluster"
  [[ ${KEEP:-0} == 1 ]] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT
"$root/tools/slurm-local.sh" start "$work/cluster" 8
status=$?
[[ $status == 0 ]] || exit "$status"
source "$work/cluster/env"
# One thread per rank: up to 4 ranks share this machine's cores.
export OMP_NUM_THREADS=1
source "$here/slurm_cases.sh"
"case_$case_name" "$magmadnn" "$work" "$root/tests/support/compare_runs.py"
