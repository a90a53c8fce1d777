# The Slurm test cases, sourced by run_slurm_case.sh once its cluster is up
# (SLURM_CONF set). Each case is a function `case_NAME MAGMADNN WORK COMPARE`
# that returns 0 on success and prints FAIL and the reason otherwise.
# `srun --mpi=pmix` starts the ranks: Debian's Slurm and Open MPI both carry
# PMIx (Open MPI 4.1 and 5.0). `--mpi=pmi2` does not work with Debian's Open
# MPI, which is built without its PMI-2 (s2) component.

# A small data-parallel run: the MLP on the first 2,000 Fashion-MNIST images.
MLP=(--preset mlp --epochs 2 --limit-train 2000 --limit-test 500 --val-split 0 --threads 1 --quiet)

fail() { echo "FAIL: $*"; return 1; }

# summary KEY RUN: the value of KEY (a dotted path) in RUN/summary.json.
summary() {
  python3 -c 'import functools,json,sys; print(functools.reduce(lambda d,k: d[k], sys.argv[1].split("."), json.load(open(sys.argv[2]+"/summary.json"))))' "$1" "$2"
}

# expect_launch RUN LAUNCHER RANKS: the summary names them.
expect_launch() {
  local launcher ranks
  launcher="$(summary launcher "$1")" ranks="$(summary ranks "$1")"
  [[ $launcher == "$2" && $ranks == "$3" ]] ||
    fail "$1 ran under '$launcher' on $ranks ranks, expected '$2' on $3"
}

# srun -n 4 starts the ranks of `magmadnn train`, which reads them from
# Slurm's PMIx: the run equals the same job under mpirun, bit for bit.
case_srun() {
  local m="$1" w="$2" compare="$3"
  srun -n 4 --mpi=pmix "$m" train "${MLP[@]}" --out "$w/srun" || fail "srun -n 4 exited $?" || return 1
  mpirun -np 4 "$m" train "${MLP[@]}" --out "$w/mpirun" || fail "mpirun -np 4 exited $?" || return 1
  expect_launch "$w/srun" srun 4 && expect_launch "$w/mpirun" mpirun 4 || return 1
  python3 "$compare" "$w/srun" "$w/mpirun" --names srun mpirun --what "srun -n 4 equals mpirun -np 4"
}

# sbatch: a batch job of 2 tasks whose script starts the ranks with srun,
# another whose script uses mpirun inside the allocation (Open MPI reads the
# allocation from Slurm), and one whose script runs magmadnn directly: one
# process, which says that it ignores the other task.
case_sbatch() {
  local m="$1" w="$2" compare="$3"
  printf '#!/bin/bash\nsrun --mpi=pmix %q train %s --out %q\n' "$m" "${MLP[*]}" "$w/srun" >"$w/srun.sh"
  printf '#!/bin/bash\nmpirun %q train %s --out %q\n' "$m" "${MLP[*]}" "$w/mpirun" >"$w/mpirun.sh"
  printf '#!/bin/bash\n%q train %s --out %q\n' "$m" "${MLP[*]/--quiet/}" "$w/alone" >"$w/alone.sh"
  for job in srun mpirun alone; do
    sbatch --wait -n 2 -o "$w/$job.out" "$w/$job.sh" >/dev/null || { cat "$w/$job.out"; fail "the $job batch job failed"; return 1; }
  done
  expect_launch "$w/srun" srun 2 && expect_launch "$w/mpirun" mpirun 2 && expect_launch "$w/alone" none 1 || return 1
  grep -q "SLURM_NTASKS=2" "$w/alone.out" || { cat "$w/alone.out"; fail "the one-process batch job did not say it ignores the other task"; return 1; }
  python3 "$compare" "$w/srun" "$w/mpirun" --names sbatch+srun sbatch+mpirun --what "sbatch with srun equals sbatch with mpirun"
}

# A job cancelled with scancel after its first checkpoint resumes in a second
# job, and ends with the weights and results of a run never interrupted.
case_resume() {
  local m="$1" w="$2" compare="$3" id
  local run=(--preset lenet5 --epochs 4 --limit-train 6000 --limit-test 500 --val-split 0 --threads 1
             --deterministic --checkpoint-every 10 --quiet)
  printf '#!/bin/bash\nsrun --mpi=pmix %q train %s --out %q\n' "$m" "${run[*]}" "$w/cut" >"$w/cut.sh"
  id="$(sbatch --parsable -n 2 -o "$w/cut.out" "$w/cut.sh")" || { fail "sbatch refused the job"; return 1; }
  for _ in $(seq 600); do [[ -f $w/cut/checkpoint.bin ]] && break; sleep 0.2; done
  [[ -f $w/cut/checkpoint.bin ]] || { cat "$w/cut.out"; scancel "$id"; fail "no checkpoint within 120 s"; return 1; }
  scancel "$id"
  for _ in $(seq 100); do [[ -z $(squeue -h -j "$id" 2>/dev/null) ]] && break; sleep 0.2; done
  [[ -f $w/cut/summary.json ]] && { fail "the job ended before scancel reached it: make the run longer"; return 1; }
  printf '#!/bin/bash\nsrun --mpi=pmix %q train --out %q --resume --epochs 4 --threads 1 --quiet\n' "$m" "$w/cut" >"$w/resume.sh"
  sbatch --wait -n 2 -o "$w/resume.out" "$w/resume.sh" >/dev/null || { cat "$w/resume.out"; fail "the resumed job failed"; return 1; }
  srun -n 2 --mpi=pmix "$m" train "${run[@]}" --out "$w/full" || fail "the uninterrupted run exited $?" || return 1
  local cut_steps full_steps
  cut_steps="$(summary timing.steps "$w/cut")" full_steps="$(summary timing.steps "$w/full")"
  echo "optimizer steps: resumed job $cut_steps, uninterrupted job $full_steps"
  ((cut_steps < full_steps)) || { fail "the resumed job trained from the start"; return 1; }
  python3 "$compare" "$w/cut" "$w/full" --names resumed uninterrupted --what "a cancelled job resumed equals one never cancelled"
}

# magmadnn tune under srun -n 3: rank 0 hands 4 trials to 2 workers.
case_tune() {
  local m="$1" w="$2"
  cat >"$w/search.json" <<EOF
{"train": {"preset": "mlp", "epochs": 1,
           "data": {"limit_train": 1000, "limit_test": 200, "val_split": 0}},
 "space": [{"path": "optimizer.learning_rate", "values": [0.01, 0.02, 0.05, 0.1]}],
 "searcher": {"type": "grid"}}
EOF
  srun -n 3 --mpi=pmix "$m" tune "$w/search.json" --out "$w/search" || fail "srun -n 3 tune exited $?" || return 1
  python3 - "$w/search/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ok = [t for t in r["trials"] if t["status"] == "ok"]
workers = sorted({t["worker"] for t in r["trials"]})
print(f"trials ok: {len(ok)} of {len(r['trials'])}, on workers {workers}")
if len(ok) != 4 or len(workers) != 2:
    print("FAIL: expected 4 trials done by 2 workers (ranks 1 and 2 under a master)"); sys.exit(1)
print("PASS: magmadnn tune under srun -n 3 ran 4 trials on 2 workers")
PY
}
