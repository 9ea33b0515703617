#!/usr/bin/env bash
# The arena side by side with Box2D v3 (docs/BENCHMARKS.md, "Side by side with Box2D"): lockstep's
# tick (BM_ArenaTick of lockstep_bench: 600 ticks timed one by one after 600 settling, the median)
# and, when a Box2D bench is given (../shared/box2d/build.sh builds one: the same pile of circles,
# its median step after 600 settling steps), Box2D's step, at 1,000, 10,000 and 22,000 bodies on 1
# and 2 threads, the two run in turn (lockstep, Box2D, lockstep, Box2D, …) REPS times (3).
# Prints each figure as it is measured (stderr), then a Markdown table of medians and the median
# of the per-round ratios, and writes CSV files in the form of Box2D's published benchmark results
# (scene,bodies,threads,steps,milliseconds) when --csv DIR is given.
#
# usage: tools/bench/versus_box2d.sh LOCKSTEP_BENCH [BOX2D_BENCH] [--csv DIR] [--reps N] [--bodies "N ..."]
set -euo pipefail
usage='usage: versus_box2d.sh LOCKSTEP_BENCH [BOX2D_BENCH] [--csv DIR] [--reps N] [--bodies "N ..."]'
lockstep_bench=
box2d_bench=
csv_dir=
reps=3
sizes="1000 10000 22000"
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) echo "$usage"; exit 0 ;;
    --csv|--reps|--bodies)
      [ $# -ge 2 ] || { echo "error: $1 needs a value ($usage)" >&2; exit 2; }
      case "$1" in --csv) csv_dir=$2 ;; --reps) reps=$2 ;; --bodies) sizes=$2 ;; esac
      shift 2 ;;
    -*) echo "error: unknown option $1 ($usage)" >&2; exit 2 ;;
    *) if [ -z "$lockstep_bench" ]; then lockstep_bench=$1; elif [ -z "$box2d_bench" ]; then box2d_bench=$1;
       else echo "error: too many arguments ($usage)" >&2; exit 2; fi; shift ;;
  esac
done
[ -n "$lockstep_bench" ] || { echo "error: LOCKSTEP_BENCH is missing ($usage)" >&2; exit 2; }
[ -x "$lockstep_bench" ] || { echo "error: $lockstep_bench is not an executable" >&2; exit 2; }
[ -z "$box2d_bench" ] || [ -x "$box2d_bench" ] || { echo "error: $box2d_bench is not an executable" >&2; exit 2; }
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "error: --reps must be a positive whole number" >&2; exit 2; }
[ -n "${sizes// /}" ] || { echo "error: --bodies needs at least one size" >&2; exit 2; }
for n in $sizes; do
  case "$n" in 1000|10000|22000) ;; *) echo "error: --bodies takes 1000, 10000 and 22000 (BM_ArenaTick's sizes), not $n" >&2; exit 2 ;; esac
done
steps=600
results=$(mktemp)
trap 'rm -f "$results"' EXIT

# One BM_ArenaTick: the median tick in microseconds (the counter median_us: each tick timed by the
# wall clock, as Box2D's bench times each step, since a step's other threads are not the calling
# thread's CPU time; the median, as Box2D's bench reports).
lockstep_tick() {
  local out
  out=$("$lockstep_bench" --benchmark_filter="^BM_ArenaTick/bodies:$1/threads:$2/" --benchmark_repetitions=1 \
    --benchmark_format=csv 2>/dev/null) ||
    { echo "error: $lockstep_bench failed on BM_ArenaTick/bodies:$1/threads:$2" >&2; return 1; }
  awk -F, '
    $1 == "name" { for (i = 1; i <= NF; ++i) if ($i == "\"median_us\"" || $i == "median_us") median = i; next }
    /^"BM_ArenaTick/ && median { print $median; exit }' <<<"$out"
}
# One Box2D bench: the median microseconds a step. The bench exits 1 when bodies end outside the
# box (Box2D loses some through the walls at 22,000 bodies): the figure stands, and that is said.
box2d_step() {
  local line
  line=$("$box2d_bench" -n "$1" -w "$2" -t "$steps" || true)
  local outside
  outside=$(sed -n 's/.*outside=\([0-9]*\).*/\1/p' <<<"$line")
  [ "${outside:-0}" = 0 ] || echo "note: Box2D, $1 bodies, $2 thread(s): $outside bodies ended outside the box" >&2
  sed -n 's/.*median_us=\([0-9.]*\).*/\1/p' <<<"$line"
}

for ((round = 1; round <= reps; ++round)); do
  for n in $sizes; do
    for threads in 1 2; do
      ours=$(lockstep_tick "$n" "$threads")
      [[ "$ours" =~ ^[0-9.e+]+$ ]] ||
        { echo "error: lockstep_bench gave no median_us for BM_ArenaTick/bodies:$n/threads:$threads (${ours:-nothing})" >&2; exit 1; }
      theirs=-
      if [ -n "$box2d_bench" ]; then
        theirs=$(box2d_step "$n" "$threads")
        [ -n "$theirs" ] || { echo "error: $box2d_bench printed no median_us" >&2; exit 1; }
      fi
      echo "round $round/$reps: $n bodies, $threads thread(s): lockstep $ours us, Box2D $theirs us" >&2
      echo "$n $threads $ours $theirs" >> "$results"
    done
  done
done

python3 - "$results" "$steps" "$csv_dir" <<'EOF'
import statistics, sys, os
rows = [line.split() for line in open(sys.argv[1])]
steps = int(sys.argv[2])
csv_dir = sys.argv[3]
configs = []
for n, t, _, _ in rows:
    if (n, t) not in configs:
        configs.append((n, t))
def runs(n, t):
    return [(float(o), None if b == '-' else float(b)) for n2, t2, o, b in rows if (n2, t2) == (n, t)]
ours = {c: statistics.median(o for o, _ in runs(*c)) for c in configs}
theirs = {c: (statistics.median(b for _, b in runs(*c)) if runs(*c)[0][1] is not None else None) for c in configs}
with_box2d = all(v is not None for v in theirs.values())
print('| bodies, threads | lockstep tick | Box2D step | Box2D / lockstep | lockstep, 2 threads / 1 |')
print('|---|---|---|---|---|')
for n, t in configs:
    ratio = statistics.median(b / o for o, b in runs(n, t)) if with_box2d else None
    one = ours.get((n, '1'))
    speedup = f'{statistics.median(o1 / o2 for (o1, _), (o2, _) in zip(runs(n, "1"), runs(n, t))):.2f}×' if t != '1' and one else ''
    print(f'| {int(n):,}, {t} | {ours[(n, t)]:,.0f} µs | ' +
          (f'{theirs[(n, t)]:,.0f} µs | **{ratio:.2f}×** |' if with_box2d else '— | — |') + f' {speedup} |')
if csv_dir:
    os.makedirs(csv_dir, exist_ok=True)
    def write(name, figures):
        with open(os.path.join(csv_dir, name), 'w') as f:
            f.write('scene,bodies,threads,steps,milliseconds\n')
            for (n, t), us in figures.items():
                f.write(f'arena,{n},{t},{steps},{us * steps / 1000:.1f}\n')
    write('lockstep.csv', ours)
    if with_box2d:
        write('box2d.csv', theirs)
    print(f'CSV: {csv_dir}/lockstep.csv' + (f', {csv_dir}/box2d.csv' if with_box2d else ''))
EOF
