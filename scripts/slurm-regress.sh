#!/usr/bin/env bash
# Runs a corpus of regression cases as a Slurm job array, one `lockstep regress` per array task
# (each takes its shard from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT), waits for the
# array, and merges the shards' JSON lines into one verdict and one JUnit file.
#
#   scripts/slurm-regress.sh [--shards N] [--cpus C] [--lockstep PATH] CORPUS OUT [SBATCH-OPTION...]
#
# CORPUS is a folder (or a manifest, if it ends in .txt) every node can read at the same path;
# OUT a folder every node can write (shared storage), which gets shard-I.jsonl, shard-I.log,
# junit.xml and merged.txt (the merged lines). Options after OUT go to sbatch (--partition=…,
# --time=…). Exit status: regress merge's — 0 every case passed, 1 any failed, 2 the shards are not
# all there (a task that could not run); the lines of any shard that is missing are in its log.
set -euo pipefail

usage() { sed -n '2,12s/^# \{0,1\}//p' "$0"; exit 2; }
shards=4
cpus=1
lockstep=$(command -v lockstep || true)
while [ $# -gt 0 ]; do
  case $1 in
    --shards) shards=$2; shift 2 ;;
    --cpus) cpus=$2; shift 2 ;;
    --lockstep) lockstep=$2; shift 2 ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) echo "error: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || usage
corpus=$(realpath "$1")
out=$2
shift 2
[[ $shards =~ ^[1-9][0-9]{0,5}$ ]] || { echo "error: --shards '$shards' is not 1 to 999999" >&2; exit 2; }
[[ $cpus =~ ^[1-9][0-9]{0,3}$ ]] || { echo "error: --cpus '$cpus' is not 1 to 9999" >&2; exit 2; }
[ -n "$lockstep" ] && [ -x "$lockstep" ] || { echo "error: no lockstep program (put it on PATH or give --lockstep PATH)" >&2; exit 2; }
[ -e "$corpus" ] || { echo "error: no corpus at '$corpus'" >&2; exit 2; }
command -v sbatch >/dev/null || { echo "error: sbatch is not on PATH (Debian: slurm-client)" >&2; exit 2; }
lockstep=$(realpath "$lockstep")
mkdir -p "$out"
out=$(realpath "$out")
rm -f "$out"/shard-*.jsonl "$out"/shard-*.log "$out/junit.xml" "$out/merged.txt"

if [[ $corpus == *.txt ]]; then cases=(--manifest "$corpus"); else cases=("$corpus"); fi
# Each task's own file, by the task id its shell expands (the rest is quoted as it stands).
printf -v task '%q ' "$lockstep" regress "${cases[@]}" -j "$cpus" --jsonl
task+="$(printf %q "$out")/shard-\${SLURM_ARRAY_TASK_ID}.jsonl"
started=$SECONDS
echo "slurm-regress: $shards shards of $corpus, $cpus core(s) each; waiting for the array"
# --wait: sbatch returns when every task has ended, with the highest exit status among them
# (1 when a case failed, which the merge says in full).
set +e
sbatch --array="0-$((shards - 1))" --cpus-per-task="$cpus" --wait --job-name=lockstep-regress \
  --output="$out/shard-%a.log" "$@" --wrap "$task"
submitted=$?
set -e
[ $submitted -le 1 ] || echo "slurm-regress: sbatch exited with $submitted; merging what the tasks wrote" >&2
set +e
"$lockstep" regress merge "$out"/shard-*.jsonl --junit "$out/junit.xml" | tee "$out/merged.txt"
merged=${PIPESTATUS[0]}
set -e
echo "slurm-regress: $((SECONDS - started)) s; JUnit in $out/junit.xml"
exit "$merged"
