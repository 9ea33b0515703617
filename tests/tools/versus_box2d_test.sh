#!/usr/bin/env bash
# tools/bench/versus_box2d.sh (docs/BENCHMARKS.md, "Side by side with Box2D") with this build's
# lockstep_bench: the table and the CSV files in Box2D's form agree with what lockstep_bench
# measured, the figure is BM_ArenaTick's median tick (its median_us counter, not its mean time: a
# stand-in bench tells them apart), a Box2D bench's figure is put beside it and divided, a Box2D bench that exits 1 for
# bodies lost through its walls keeps its figure and is named, and bad arguments are one error
# line with exit code 2. Box2D itself is never a dependency of the tests: a stand-in prints what
# ../shared/box2d's bench prints (`... median_us=M outside=K`).
#
# usage: versus_box2d_test.sh SCRIPT LOCKSTEP_BENCH
set -euo pipefail
script=$1
bench=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }

# Without Box2D: lockstep's column alone, and its CSV.
bash "$script" "$bench" --bodies 1000 --reps 1 --csv "$work/alone" > "$work/alone.md" 2> "$work/alone.err" ||
  fail "the script failed without Box2D: $(tail -n 3 "$work/alone.err")"
grep -q '^| bodies, threads | lockstep tick | Box2D step | Box2D / lockstep | lockstep, 2 threads / 1 |$' "$work/alone.md" ||
  fail "no table header in: $(cat "$work/alone.md")"
for threads in 1 2; do
  row=$(grep "^| 1,000, $threads |" "$work/alone.md") || fail "no row for 1,000 bodies on $threads thread(s)"
  us=$(sed -n 's/^| 1,000, [12] | \([0-9,]*\) µs | — | — |.*/\1/p' <<<"$row" | tr -d ,)
  [ -n "$us" ] && [ "$us" -gt 0 ] || fail "row without a lockstep figure and dashes for Box2D: $row"
  # The CSV holds the same figure as milliseconds for the 600 timed steps.
  ms=$(awk -F, -v t="$threads" '$1 == "arena" && $2 == 1000 && $3 == t && $4 == 600 { print $5 }' "$work/alone/lockstep.csv")
  [ -n "$ms" ] || fail "lockstep.csv has no arena,1000,$threads,600 row: $(cat "$work/alone/lockstep.csv")"
  python3 -c "import sys; us, ms = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(ms - us * 0.6) <= 0.6 else 1)" "$us" "$ms" ||
    fail "the CSV's $ms ms for 600 steps is not the table's $us µs a tick"
done
[ "$(head -n 1 "$work/alone/lockstep.csv")" = "scene,bodies,threads,steps,milliseconds" ] || fail "lockstep.csv's header"
[ "$(wc -l < "$work/alone/lockstep.csv")" -eq 3 ] || fail "lockstep.csv should hold a header and 2 rows"
[ ! -e "$work/alone/box2d.csv" ] || fail "box2d.csv written without a Box2D bench"
grep -q '^| 1,000, 2 | .* | [0-9]\.[0-9][0-9]× |$' "$work/alone.md" || fail "no 2 threads / 1 figure on the 2-thread row"

# With a stand-in Box2D bench that, like the real one when bodies end outside its box, exits 1.
cat > "$work/box2d" <<'EOF'
#!/bin/sh
echo "bodies=$2 workers=$4 steps=$6 median_us=900.0 outside=3"
exit 1
EOF
chmod +x "$work/box2d"
bash "$script" "$bench" "$work/box2d" --bodies 1000 --reps 1 --csv "$work/both" > "$work/both.md" 2> "$work/both.err" ||
  fail "the script failed with a Box2D bench: $(tail -n 3 "$work/both.err")"
grep -q '^note: Box2D, 1000 bodies, 1 thread(s): 3 bodies ended outside the box$' "$work/both.err" ||
  fail "the bodies Box2D lost are not named: $(cat "$work/both.err")"
row=$(grep '^| 1,000, 1 |' "$work/both.md") || fail "no 1-thread row with Box2D"
us=$(sed -n 's/^| 1,000, 1 | \([0-9,]*\) µs | 900 µs | \*\*\([0-9.]*\)×\*\* |.*/\1/p' <<<"$row" | tr -d ,)
ratio=$(sed -n 's/^| 1,000, 1 | [0-9,]* µs | 900 µs | \*\*\([0-9.]*\)×\*\* |.*/\1/p' <<<"$row")
[ -n "$us" ] && [ -n "$ratio" ] || fail "row without Box2D's 900 µs and a ratio: $row"
# The ratio is Box2D's figure over lockstep's unrounded one, which the table rounds to whole µs.
python3 -c "import sys; us, r = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if 900 / (us + 0.5) - 0.005 <= r <= 900 / (us - 0.5) + 0.005 else 1)" "$us" "$ratio" ||
  fail "Box2D / lockstep is $ratio, not 900 / $us"
grep -q '^arena,1000,1,600,540.0$' "$work/both/box2d.csv" || fail "box2d.csv lacks 900 µs as 540.0 ms: $(cat "$work/both/box2d.csv")"

# A lockstep_bench that fails, or gives no figure, ends the script with exit 1 and this error line.
expect_bench_error() {  # BENCH LINE
  local status=0
  bash "$script" "$1" --bodies 1000 --reps 1 > /dev/null 2> "$work/bench.err" || status=$?
  [ "$status" -eq 1 ] || fail "exit $status, not 1, for $1"
  grep -qxF "$2" "$work/bench.err" || fail "for $1, not '$2': $(cat "$work/bench.err")"
}

# The figure is the median_us counter, whatever the mean time says: a stand-in lockstep_bench that
# prints Google Benchmark's CSV with a mean of 999 µs and a median of 251 µs on 1 thread, 125 on 2.
cat > "$work/fixed_bench" <<'EOF'
#!/bin/sh
case "$*" in *threads:2/*) median=125.0 ;; *) median=251.0 ;; esac
echo 'name,iterations,real_time,cpu_time,time_unit,bytes_per_second,items_per_second,label,error_occurred,error_message,"median_us","searches/tick","ticks/s"'
echo "\"BM_ArenaTick/bodies:1000/threads:1/iterations:600/real_time\",600,999.0,999.0,us,,1001.0,,,,$median,1.2,1001.0"
EOF
chmod +x "$work/fixed_bench"
bash "$script" "$work/fixed_bench" --bodies 1000 --reps 1 --csv "$work/fixed" > "$work/fixed.md" 2> "$work/fixed.err" ||
  fail "the script failed on a stand-in bench: $(tail -n 3 "$work/fixed.err")"
grep -q '^| 1,000, 1 | 251 µs | — | — |  |$' "$work/fixed.md" || fail "not the 1-thread median: $(cat "$work/fixed.md")"
grep -q '^| 1,000, 2 | 125 µs | — | — | 2.01× |$' "$work/fixed.md" || fail "not the 2-thread median: $(cat "$work/fixed.md")"
grep -q '^arena,1000,1,600,150.6$' "$work/fixed/lockstep.csv" || fail "lockstep.csv lacks 251 µs as 150.6 ms: $(cat "$work/fixed/lockstep.csv")"
# A bench without the counter (an older lockstep_bench) is an error, not a figure.
cat > "$work/no_median_bench" <<'EOF'
#!/bin/sh
echo 'name,iterations,real_time,cpu_time,time_unit,bytes_per_second,items_per_second,label,error_occurred,error_message,"searches/tick","ticks/s"'
echo '"BM_ArenaTick/bodies:1000/threads:1/iterations:600/real_time",600,999.0,999.0,us,,1001.0,,,,1.2,1001.0'
EOF
chmod +x "$work/no_median_bench"
expect_bench_error "$work/no_median_bench" "error: lockstep_bench gave no median_us for BM_ArenaTick/bodies:1000/threads:1 (nothing)"

# Bad arguments: one error line, exit code 2, before anything is measured.
expect_error() {
  local expected=$1
  shift
  local status=0
  bash "$script" "$@" > "$work/bad.out" 2> "$work/bad.err" || status=$?
  [ "$status" -eq 2 ] || fail "exit $status, not 2, for: $*"
  [ "$(wc -l < "$work/bad.err")" -eq 1 ] || fail "not one error line for: $* ($(cat "$work/bad.err"))"
  grep -q "^error: $expected" "$work/bad.err" || fail "for $*: $(cat "$work/bad.err")"
  [ ! -s "$work/bad.out" ] || fail "output before the error for: $*"
}
expect_error "--bodies takes 1000, 10000 and 22000" "$bench" --bodies 5
expect_error "--reps must be a positive whole number" "$bench" --reps 0
expect_error "$work/missing is not an executable" "$work/missing"
expect_error "$work/missing is not an executable" "$bench" "$work/missing"
expect_error "unknown option --fast" "$bench" --fast
expect_error "LOCKSTEP_BENCH is missing"
expect_error "--csv needs a value" "$bench" --csv
expect_error "--bodies needs at least one size" "$bench" --bodies ""
# A lockstep_bench that fails is named, not passed over.
printf '#!/bin/sh\nexit 3\n' > "$work/broken_bench"
chmod +x "$work/broken_bench"
expect_bench_error "$work/broken_bench" "error: $work/broken_bench failed on BM_ArenaTick/bodies:1000/threads:1"
echo "ok: table, CSV, the median counter, Box2D's column and its lost bodies, a failing bench, a bench without the counter, and 8 bad argument lists"
