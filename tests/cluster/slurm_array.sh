#!/usr/bin/env bash
# A real single-node Slurm cluster from Debian's packages (munged, slurmctld, slurmd, started here
# without systemd and stopped by their process ids), a generated corpus of 64 regression cases
# (two of them failing on purpose), scripts/slurm-regress.sh running it as a 4-task job array and
# merging the shards; the merged lines must be exactly those `regress -j 2` prints for the
# same corpus on this machine: the same cases, in the same order, with the same verdicts.
#
#   tests/cluster/slurm_array.sh LOCKSTEP SLURM_REGRESS_SCRIPT
set -euo pipefail
lockstep=$(realpath "$1")
script=$(realpath "$2")
for program in munged slurmctld slurmd sbatch sinfo; do
  command -v "$program" >/dev/null || PATH=$PATH:/usr/sbin
  command -v "$program" >/dev/null || { echo "FAIL: $program is not installed (scripts/install-deps.sh installs it)"; exit 1; }
done

work=$(mktemp -d /tmp/lockstep-slurm-XXXXXX)
pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap stop EXIT
fail() { echo "FAIL: $*"; for log in "$work"/*.log; do [ -f "$log" ] && { echo "--- $log"; tail -n 20 "$log"; }; done; exit 1; }
started=$SECONDS

# --- the corpus: 48 golden cases of three scenes and 16 recordings, generated, never committed
corpus=$work/corpus
mkdir -p "$corpus/golden" "$corpus/replays"
for i in $(seq 0 47); do
  scene=(ball spring arena); scene=${scene[$((i % 3))]}
  extra=""; [ "$scene" = arena ] && extra=$'bodies 40\n'
  printf 'scene %s\n%sseed %d\nticks 240\ninputs bots\n' "$scene" "$extra" "$i" >"$corpus/golden/case-$i.golden"
done
for i in $(seq 0 15); do
  "$lockstep" run --scene ball --ticks 240 --seed "$i" --record "$corpus/replays/r-$i.lsr" >/dev/null
done
env -i "$lockstep" regress --update "$corpus" >/dev/null || fail "regress --update of the corpus"
# Two cases whose held final hash no longer matches: failures the shards must report.
for i in 5 33; do sed -i 's/^hash 240 .*/hash 240 0000000000000000/' "$corpus/golden/case-$i.golden"; done
set +e
env -i "$lockstep" regress "$corpus" -j 2 >"$work/reference.txt" 2>"$work/reference.err"
reference=$?
set -e
[ $reference = 1 ] || fail "regress -j 2 of the corpus exited $reference, not 1"
[ "$(tail -n 1 "$work/reference.txt")" = "62 passed, 2 failed" ] || fail "reference: $(tail -n 1 "$work/reference.txt")"

# --- the cluster: one node, this machine, every core
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
mkdir -p "$work/state" "$work/spool"
dd if=/dev/urandom of="$work/munge.key" bs=1024 count=1 status=none
chmod 0400 "$work/munge.key"
munged --foreground --force --socket="$work/munge.socket" --key-file="$work/munge.key" --pid-file="$work/munged.pid" \
  --seed-file="$work/munge.seed" --log-file="$work/munged.log" &
pids+=($!)
for _ in $(seq 100); do [ -S "$work/munge.socket" ] && break; sleep 0.05; done
[ -S "$work/munge.socket" ] || fail "munged did not start"
cpus=$(nproc)
cat >"$work/slurm.conf" <<CONF
ClusterName=lockstep-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge.socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerParameters=batch_sched_delay=0
MinJobAge=5
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=lockstep-node NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=lockstep Nodes=lockstep-node Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$work/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >>"$work/slurmctld.log" 2>&1 &
pids+=($!)
slurmd -D -N lockstep-node -f "$SLURM_CONF" >>"$work/slurmd.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do
  state=$(sinfo -h -n lockstep-node -o %t 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.1
done
[ "$state" = idle ] || fail "the node did not come up idle (state '$state')"
echo "cluster up in $((SECONDS - started)) s (corpus generated and its reference run included)"

# --- the array, and its merge
array_started=$SECONDS
set +e
"$script" --shards 4 --cpus 1 --lockstep "$lockstep" "$corpus" "$work/out" >"$work/array.out" 2>&1
merged=$?
set -e
tail -n 4 "$work/array.out"
[ $merged = 1 ] || fail "slurm-regress.sh exited $merged, not 1 (two cases fail)"
for i in 0 1 2 3; do
  [ -s "$work/out/shard-$i.jsonl" ] || fail "no JSON lines from array task $i"
  grep -qx "regress: shard $i/4, from SLURM_ARRAY_TASK_ID=$i of SLURM_ARRAY_TASK_COUNT=4 from 0" "$work/out/shard-$i.log" \
    || fail "task $i did not take shard $i/4 from Slurm's variables: $(head -n 3 "$work/out/shard-$i.log")"
done
diff "$work/reference.txt" "$work/out/merged.txt" >"$work/difference.txt" \
  || fail "the merged shards differ from regress -j 2: $(head -n 20 "$work/difference.txt")"
/usr/bin/python3 -c 'import sys; from junitparser import JUnitXml; s = next(iter(JUnitXml.fromfile(sys.argv[1]))); sys.exit(0 if (s.tests, s.failures) == (64, 2) else 1)' \
  "$work/out/junit.xml" || fail "the merged JUnit file does not hold 64 cases with 2 failures"
echo "PASS: 64 cases as a 4-task Slurm array in $((SECONDS - array_started)) s, merged, equal to regress -j 2; $((SECONDS - started)) s in all"
