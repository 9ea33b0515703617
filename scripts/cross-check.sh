#!/usr/bin/env bash
# Proves one hash on every architecture: builds `lockstep` for each target with Debian's cross
# compilers and Emscripten (toolchains in cmake/toolchains/), runs it — natively for i686 (under
# qemu-i386 where the kernel runs no 32-bit x86 programs), under
# qemu-user for the other Linux targets, under node for wasm32 — and compares it with the native
# x86-64 build:
#   - every tick's hash of a run of each of the four scenes (the golden cases' configurations);
#   - the hashes the golden cases hold (`lockstep regress` on the target; see heavy_golden);
#   - a replay recorded natively verifies on the target (from tick 0 and seeking from a
#     keyframe), and one recorded on the target verifies natively;
#   - on s390x and i686, a networked session of a native host and a target peer over loopback UDP
#     ends on one hash; aarch64, riscv64 and wasm32 (which has no UDP sockets) are built without
#     the network, and their `host` is checked to say so; wasm32's `info`, `diff` and `export`
#     must print what native's do.
# The targets are built without the viewer's server (LOCKSTEP_VIEW_SERVER=OFF), and their `view`
# is checked to say so.
# Prints one line per architecture, `<arch>: identical (<N> hashes compared)` or
# `<arch>: first divergence at tick <T> in <case>`, and exits 1 on any divergence (2 on a bad
# argument or a failed build).
#
# Each architecture's build and comparison times are printed to stderr.
#
# usage: scripts/cross-check.sh [ARCH...]     (default: wasm32 s390x i686 riscv64 aarch64)
# environment:
#   LOCKSTEP_NATIVE=PATH        the native lockstep to compare with (default: build/release's,
#                               built here if missing)
#   LOCKSTEP_CROSS_TICKS=N      ticks of each scene run and recording (default 2000)
#   LOCKSTEP_CROSS_GOLDEN=0     skip the golden cases (10,000 ticks each) on the target; =all runs
#                               the 1,000-body arena's case on every target (default: i686 and
#                               wasm32, which run near native speed)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

known=(i686 aarch64 riscv64 s390x wasm32)
archs=("$@")
# By default wasm32 first (scripts/test.sh built it already, so its comparisons run beside the first
# cross build), then the slowest under qemu, so that its long comparisons hide i686's build (the
# longest), then the two short builds without the network.
[ ${#archs[@]} -eq 0 ] && archs=(wasm32 s390x i686 riscv64 aarch64)
for arch in "${archs[@]}"; do
  case " ${known[*]} " in
    *" $arch "*) ;;
    *) echo "error: unknown architecture '$arch' (known: ${known[*]})" >&2; exit 2 ;;
  esac
done
ticks=${LOCKSTEP_CROSS_TICKS:-2000}
golden=${LOCKSTEP_CROSS_GOLDEN:-1}
case $golden in
  0 | 1 | all) ;;
  *) echo "error: LOCKSTEP_CROSS_GOLDEN must be 0, 1 or all, not '$golden'" >&2; exit 2 ;;
esac
if ! [[ "$ticks" =~ ^[1-9][0-9]*$ ]]; then
  echo "error: LOCKSTEP_CROSS_TICKS must be a positive integer, not '$ticks'" >&2
  exit 2
fi

# --- packages: the project's, cross compilers and qemu-user among them ----------------------
./scripts/install-deps.sh >/dev/null
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}  # as scripts/test.sh: a new tree builds with Ninja

# --- builds ---------------------------------------------------------------------------------
native=${LOCKSTEP_NATIVE:-$root/build/release/tools/lockstep}
if [ -z "${LOCKSTEP_NATIVE:-}" ]; then
  echo "cross-check: building the native lockstep (build/release)" >&2
  cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_BUILD_TESTS=OFF >/dev/null
  cmake --build build/release -j "$(nproc)" --target lockstep >/dev/null
fi
[ -x "$native" ] || { echo "error: no native lockstep at $native" >&2; exit 2; }

# The network (lockstep::net, Boost.Asio, libsodium) is built and its session compared on s390x
# (64-bit, big-endian) and i686 (32-bit): between them they hold every width and byte order the
# network code meets, and libsodium 1.0.18's code for aarch64 and riscv64 is the same portable C as
# s390x's (its only SIMD code is x86's). aarch64 and riscv64 are built without it, as wasm32 is,
# and their `host` is checked to say so (Debian 12 has no riscv64 packages to take libsodium from).
net_archs=" s390x i686 "
builds_network() { [[ "$net_archs" == *" $1 "* ]]; }

# libsodium for those targets: Debian 12's own libsodium-dev for the architecture (the version the
# build machine's is), unpacked, pinned by checksum. Only its static library, headers and
# pkg-config file are used; a cross build links statically.
sodium_pool=http://deb.debian.org/debian/pool/main/libs/libsodium
sodium_version=1.0.18-1+deb12u1
declare -A sodium_deb_arch=([s390x]=s390x [i686]=i386)
declare -A sodium_sha256=(
  [s390x]=be7643ded23a9f699af1b4c20e4e23930932da3aff57a1f4703f1c4acac96cdf
  [i686]=4da9bd73b2a5c14abb0d0a2c191b7855051f3a9f5ec3275135acdb1309e7ee86
)
fetch_sodium() {  # arch -> build/cross/<arch>/sodium/usr (static library, headers, pkg-config file)
  local arch=$1 deb_arch=${sodium_deb_arch[$1]} dir=$root/build/cross/sodium-download
  local name=libsodium-dev_${sodium_version}_${sodium_deb_arch[$1]}.deb prefix=$root/build/cross/$1/sodium
  [ -f "$prefix/.unpacked-$sodium_version" ] && return 0
  mkdir -p "$dir"
  if ! echo "${sodium_sha256[$arch]}  $dir/$name" | sha256sum -c --quiet >/dev/null 2>&1; then
    curl -fsS -o "$dir/$name" "$sodium_pool/${name//+/%2B}" ||
      { echo "error: cannot download $name from $sodium_pool" >&2; return 2; }
    echo "${sodium_sha256[$arch]}  $dir/$name" | sha256sum -c --quiet >/dev/null 2>&1 ||
      { echo "error: $name does not have the checksum it had when it was pinned" >&2; return 2; }
  fi
  rm -rf "$prefix" && mkdir -p "$prefix"
  dpkg-deb -x "$dir/$name" "$prefix"
  local libdir=$prefix/usr/lib/$deb_arch-linux-gnu
  rm -f "$libdir/libsodium.so"  # a link to the shared library, which this package does not hold
  sed -i "s|^prefix=.*|prefix=$prefix/usr|" "$libdir/pkgconfig/libsodium.pc"
  touch "$prefix/.unpacked-$sodium_version"
}
sodium_pkgconfig() { echo "$root/build/cross/$1/sodium/usr/lib/${sodium_deb_arch[$1]}-linux-gnu/pkgconfig"; }

build_wasm() {  # -> build/wasm/tools/lockstep.js (+ .wasm), run by node; shared with view --static
  ./scripts/build-web-engine.sh build/wasm || exit 2
}

build_target() {  # arch -> build/cross/<arch>/tools/lockstep
  local arch=$1 dir=build/cross/$1
  [ "$arch" = wasm32 ] && { build_wasm; return; }
  mkdir -p "$dir"
  local network=(-DLOCKSTEP_NETWORK=OFF) pkg_config=()
  if builds_network "$arch"; then
    fetch_sodium "$arch" || exit 2
    network=(-DLOCKSTEP_NETWORK=ON "-DLOCKSTEP_CROSS_PREFIX=$root/$dir/sodium")
    pkg_config=("PKG_CONFIG_LIBDIR=$(sodium_pkgconfig "$arch")" PKG_CONFIG_PATH=)
  fi
  rm -f "$dir/CMakeCache.txt"  # the toolchain file is read only when the cache is new
  echo "cross-check: building lockstep for $arch ($dir)" >&2
  # A unity build: each module's sources compiled as one, which halves the time (the headers are
  # parsed once per module, not once per file). The hashes must not care, and they are compared.
  # Without the viewer's server (Boost.Beast, a quarter of the build), which hashes nothing.
  if ! { env "${pkg_config[@]}" \
         cmake -S . -B "$dir" --toolchain "$root/cmake/toolchains/$arch-linux-gnu.cmake" "${network[@]}" \
           -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DLOCKSTEP_BUILD_TESTS=OFF -DLOCKSTEP_WERROR=ON \
           -DLOCKSTEP_VIEW_SERVER=OFF &&
         cmake --build "$dir" -j "$(nproc)" --target lockstep; } >"$dir/build.log" 2>&1; then
    tail -n 20 "$dir/build.log" >&2
    echo "error: the $arch build failed; see $dir/build.log" >&2
    exit 2
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- the comparisons, each printing "<hashes compared>" or "divergence <tick> <case>" -------
scenes=(
  "arena-1000-semi-implicit|--scene arena --players 4 --bodies 1000 --substeps 8 --integrator semi-implicit --seed 1"
  "arena-300-verlet|--scene arena --players 4 --bodies 300 --substeps 4 --integrator verlet --seed 2"
  "ball-rk4|--scene ball --players 2 --substeps 1 --integrator rk4 --seed 3"
  "spring-explicit|--scene spring --players 1 --substeps 1 --integrator explicit --seed 4"
)

compare_scene() {  # name args... ; every tick's hash, native against target
  local name=$1; shift
  if ! "$native" run "$@" --ticks "$ticks" --hash-log "$work/$name.native" >/dev/null; then
    echo "divergence 0 $name (the native run failed)"
    return
  fi
  "${target[@]}" run "$@" --ticks "$ticks" --hash-log "$work/$name.target" >/dev/null || true
  touch "$work/$name.target"  # a target that failed to start diverges at tick 0
  awk -v name="$name" '
    NR == FNR { want[FNR] = $0; n = FNR; next }
    { got[FNR] = $0; m = FNR }
    END {
      for (i = 1; i <= n; i++) if (!(i in got) || got[i] != want[i]) {
        split(want[i], f, " "); print "divergence " f[1] " " name; exit }
      print n }' "$work/$name.native" "$work/$name.target"
}

# The 1,000-body arena's golden case takes four fifths of the golden time under qemu (over five
# minutes of s390x's), so by default it runs where the target runs near native speed, i686 natively
# (not where the kernel makes it a qemu target too) and wasm32 under node; the qemu targets hold the other golden cases and compare every tick of
# that configuration's 2,000-tick scene run instead (which the targets that run the golden case
# skip: it holds that configuration's hashes for 10,000 ticks).
heavy_golden=arena-1000-semi-implicit
heavy_golden_archs=" i686 wasm32 "

runs_heavy_golden() { [ "$golden" = all ] || { [ "$golden" = 1 ] && [[ "$heavy_golden_archs" == *" $arch "* ]]; }; }

compare_golden() {  # the hashes the golden cases hold, checked by regress on the target
  local out held=0 f cases=$work/golden
  mkdir -p "$cases"
  for f in "$root"/tests/golden/*.golden; do
    if [ "$(basename "$f" .golden)" != "$heavy_golden" ] || runs_heavy_golden; then cp "$f" "$cases/"; fi
  done
  out=$("${target[@]}" regress "$cases" 2>/dev/null || true)
  if grep -q '^FAIL' <<<"$out"; then
    grep -m 1 '^FAIL' <<<"$out" |
      sed -E 's/^FAIL ([^:]+): first divergent tick ([0-9]+).*/divergence \2 golden \1/; s/^FAIL ([^:]+):.*/divergence 0 golden \1/'
    return
  fi
  for f in "$cases"/*.golden; do held=$((held + $(grep -c '^hash ' "$f"))); done
  [ "$(grep -c '^PASS' <<<"$out")" -eq "$(ls "$cases"/*.golden | wc -l)" ] ||
    { echo "divergence 0 golden (regress did not run every case)"; return; }
  echo "$held"
}

verify_replay() {  # who file label [args]: "<hashes>" from `replay`, or a divergence
  local who=$1 file=$2 label=$3; shift 3
  local out
  out=$("${who}" replay "$file" "$@" 2>&1 | tail -n 1) || true
  if [[ "$out" =~ ^ok\ [0-9]+\ ticks\ verified,\ ([0-9]+)\ hashes\ checked ]]; then
    echo "${BASH_REMATCH[1]}"
  elif [[ "$out" =~ ^desync\ at\ tick\ ([0-9]+) ]]; then
    echo "divergence ${BASH_REMATCH[1]} $label"
  else
    echo "divergence 0 $label ($out)"
  fi
}

compare_replays() {  # recorded natively, verified on the target; and the other way
  local args=(--scene arena --players 4 --bodies 300 --seed 5 --ticks "$ticks" --keyframe-every 500)
  if ! "$native" run "${args[@]}" --record "$work/native.lsr" >/dev/null; then
    echo "divergence 0 replays (the native recording failed)"
    return
  fi
  "${target[@]}" run "${args[@]}" --record "$work/target.lsr" >/dev/null || true
  target_replay() { "${target[@]}" "$@"; }
  verify_replay target_replay "$work/native.lsr" "replay recorded natively"
  verify_replay target_replay "$work/native.lsr" "replay recorded natively, seeking a keyframe" \
    --from-tick $((ticks / 2 + 1))
  verify_replay "$native" "$work/target.lsr" "replay recorded on $arch"
  # Same seed, same bots: after the header (which names the build) the two recordings — inputs,
  # hashes, keyframe snapshots — must be the same bytes.
  local header_native header_target
  header_native=$({ "$native" info "$work/native.lsr" || true; } | sed -n 's/^size *header \([0-9,]*\),.*/\1/p' | tr -d ,)
  header_target=$({ "$native" info "$work/target.lsr" || true; } | sed -n 's/^size *header \([0-9,]*\),.*/\1/p' | tr -d ,)
  if [ -z "$header_native" ] || [ -z "$header_target" ] ||
     ! cmp -s -i "$header_native:$header_target" "$work/native.lsr" "$work/target.lsr"; then
    echo "divergence 0 the recordings' bytes after their headers"
  fi
}

check_view_absent() {  # the targets are built without the viewer's server, and say so
  local out want="error: this lockstep was built without the viewer (LOCKSTEP_VIEW_SERVER=OFF)"
  "$native" run --ticks 10 --record "$work/view.lsr" >/dev/null
  out=$("${target[@]}" view "$work/view.lsr" --port 0 2>&1 >/dev/null | tail -n 1) || true
  [ "$out" = "$want" ] && echo 0 || echo "divergence 0 view in a build without the viewer's server (said '$out')"
}

compare_commands() {  # wasm32: info, diff, export and regress --jsonl print what the native build prints
  local c native_out target_out
  "$native" run --ticks 300 --seed 3 --players 2 --record "$work/commands-b.lsr" >/dev/null
  for c in "info $work/native.lsr" "diff $work/native.lsr $work/commands-b.lsr" \
           "export $work/native.lsr --from-tick 10 --to-tick 12 --fields pos_x,vel_y" "diff $work/native.lsr $work/native.lsr"; do
    # shellcheck disable=SC2086  # the command's words split on purpose
    native_out=$("$native" $c 2>&1; echo "exit $?")
    # shellcheck disable=SC2086
    target_out=$("${target[@]}" $c 2>&1; echo "exit $?")
    if [ "$native_out" != "$target_out" ]; then
      echo "divergence 0 \`${c%% *}\` printed what the native build does not"
      return
    fi
  done
  echo 0
}

check_network_absent() {  # wasm32, aarch64 and riscv64 are built without the network, and say so
  local out want="error: this lockstep was built without the network (LOCKSTEP_NETWORK=OFF): \`host\` needs UDP sockets"
  out=$("${target[@]}" host --port 0 2>&1 >/dev/null | tail -n 1) || true
  [ "$out" = "$want" ] && echo 0 || echo "divergence 0 host in a build without the network (said '$out')"
}

compare_session() {  # a native host and a target peer over loopback UDP
  local port; port=$(free_port)
  local session=(--players 2 --bot --ticks 600 --scene arena --bodies 100 --seed 6)
  # A target peer that cannot start (no emulator, a broken build) leaves the host waiting: it gives
  # up after 120 s (an emulated join takes a few), and timeout ends a session that hangs past that.
  timeout 300 "$native" host --port "$port" --open --wait-timeout 120 "${session[@]}" >"$work/host.out" 2>&1 &
  local host=$!
  sleep 0.3  # the host binds first; a joiner that comes early retries its hello anyway
  "${target[@]}" join "127.0.0.1:$port" --bot >"$work/peer.out" 2>&1 || true
  wait "$host" || true
  local a b desync; a=$(tail -n 1 "$work/host.out"); b=$(tail -n 1 "$work/peer.out")
  desync=$(grep -ho 'desync at tick [0-9]*' "$work/host.out" "$work/peer.out" | head -n 1 || true)
  if [[ "$a" =~ ^tick\ ([0-9]+)\ hash && "$a" == "$b" ]]; then
    echo "${BASH_REMATCH[1]}"  # the host compared the peer's hash at every tick
  elif [ -n "$desync" ]; then
    echo "divergence ${desync##* } networked session"
  else
    echo "divergence 0 networked session (host: $a; peer: $b)"
  fi
}

# --- the floating-point rules, for code compiled without lockstep's flags ---------------------
# i686: an engine header refuses to compile under x87 arithmetic and compiles under SSE2.
# Others: the engine's inline arithmetic holds no fused multiply-add under g++'s and clang's
# default contraction, while a plain user `a*b + c` in the same file does (so the probe can see).
fused='[[:space:]](fmadd|fmsub|fnmadd|fnmsub|fmla|fmls)([.]d)?[[:space:]]|[[:space:]](madbr|msdbr|madb|msdb|wfmadb|wfmsdb|wfnmadb|wfnmsdb)[[:space:]]'

fused_functions() {  # object file -> the functions holding a fused multiply-add, one per line
  "$triple-objdump" -d -C --no-show-raw-insn "$1" |
    awk -v fused="$fused" '/^[0-9a-f]+ <.*>:$/ { fn = substr($0, index($0, "<") + 1); sub(/>:$/, "", fn); next }
                            $0 ~ fused && fn != "" { print fn; fn = "" }'
}

check_float_rules() {  # prints nothing when the rules hold, else what broke
  local probe=$root/tests/cross/contraction_probe.cpp out compiler
  local include=(-I "$root/engine/include")
  # WebAssembly's floating point is IEEE binary32/64 with round-to-nearest and no fused multiply-add
  # (only relaxed SIMD has one, and the build does not enable it): nothing to probe.
  [ "$arch" = wasm32 ] && return
  if [ "$arch" = i686 ]; then
    if out=$("$triple-g++-12" -std=c++20 -fsyntax-only "${include[@]}" "$probe" 2>&1) ||
       ! grep -q 'excess precision' <<<"$out"; then
      echo "an engine header compiled under x87 arithmetic"
    elif ! "$triple-g++-12" -std=c++20 -msse2 -mfpmath=sse -fsyntax-only "${include[@]}" "$probe"; then
      echo "an engine header did not compile with -msse2 -mfpmath=sse"
    fi
    return
  fi
  for compiler in "$triple-g++-12" "clang++ --target=$triple"; do
    # shellcheck disable=SC2086  # "clang++ --target=…" splits on purpose
    if ! $compiler -std=gnu++20 -O2 "${include[@]}" -c "$probe" -o "$work/probe.o" 2>"$work/probe.log"; then
      echo "the probe did not compile with $compiler (see $work/probe.log)"
      return
    fi
    out=$(fused_functions "$work/probe.o" | sort -u)
    if ! grep -q '^probe_user_madd' <<<"$out"; then
      echo "$compiler fused nothing in the probe, so it cannot show the engine's arithmetic is safe"
      return
    fi
    if grep -qv '^probe_user_madd' <<<"$out"; then
      echo "$compiler fused a multiply-add in $(grep -m 1 -v '^probe_user_madd' <<<"$out")"
      return
    fi
  done
}

# Each target is built while the one before it is compared (the comparisons run one program at a
# time, the build keeps the other core busy).
[[ " ${archs[*]} " == *" wasm32 "* ]] && ! command -v node >/dev/null &&
  { echo "error: wasm32 needs node (Debian's nodejs, which the emscripten package installs)" >&2; exit 2; }
declare -A build_pid=()
start_build() {  # arch: builds in the background, keeping how long it took in build/cross/<arch>.seconds
  mkdir -p build/cross
  { local start=$SECONDS; build_target "$1"; echo $((SECONDS - start)) >"build/cross/$1.seconds"; } &
  build_pid[$1]=$!
}
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
start_build "${archs[0]}"

status=0
for i in "${!archs[@]}"; do
  arch=${archs[$i]}
  wait "${build_pid[$arch]}" || exit 2
  [ $((i + 1)) -lt ${#archs[@]} ] && start_build "${archs[$((i + 1))]}"
  case $arch in
    i686)
      # Natively where the kernel runs 32-bit x86 programs; some kernels (a VM's, built without
      # IA32 emulation) refuse them with "Exec format error": there, under qemu-i386.
      if "$root/build/cross/$arch/tools/lockstep" --version >/dev/null 2>&1; then
        target=(timeout 1200 "$root/build/cross/$arch/tools/lockstep")
      else
        echo "cross-check: this kernel does not run 32-bit x86 programs; i686 runs under qemu-i386"
        target=(timeout 1200 qemu-i386 "$root/build/cross/$arch/tools/lockstep")
        # Under qemu it is a qemu target like the others: the heavy golden case is left to wasm32.
        heavy_golden_archs=${heavy_golden_archs/ i686 / }
      fi
      ;;
    wasm32) target=(timeout 1200 node "$root/build/wasm/tools/lockstep.js") ;;
    *) target=(timeout 1200 "qemu-$arch" "$root/build/cross/$arch/tools/lockstep") ;;
  esac
  work=$root/build/cross/$arch/check
  rm -rf "$work" && mkdir -p "$work"
  triple=$arch-linux-gnu
  broken=$(check_float_rules)
  if [ -n "$broken" ]; then
    echo "$arch: floating-point rules broken: $broken"
    status=1
    continue
  fi
  echo "cross-check: comparing $arch with the native build" >&2
  compare_start=$SECONDS

  # The golden cases, the longest comparison, run beside the others.
  [ "$golden" != 0 ] && { compare_golden >"$work/golden.result" & golden_pid=$!; }
  results=("$(check_view_absent)")
  for entry in "${scenes[@]}"; do
    # Where the heavy golden case runs, it holds that configuration's hashes for 10,000 ticks.
    if [ "${entry%%|*}" = "$heavy_golden" ] && runs_heavy_golden; then continue; fi
    # shellcheck disable=SC2086  # the scene's arguments split on purpose
    results+=("$(compare_scene "${entry%%|*}" ${entry#*|})")
  done
  replays=$(compare_replays || echo "divergence 0 replays (a step failed)")
  while IFS= read -r line; do results+=("$line"); done <<<"$replays"
  if builds_network "$arch"; then
    results+=("$(compare_session)")
  else
    results+=("$(check_network_absent)")
  fi
  [ "$arch" = wasm32 ] && results+=("$(compare_commands)")
  if [ "$golden" != 0 ]; then
    wait "$golden_pid" || true
    results+=("$(cat "$work/golden.result")")
  fi

  echo "cross-check: $arch built in $(cat "build/cross/$arch.seconds") s (beside the comparisons before it), compared in $((SECONDS - compare_start)) s" >&2
  compared=0 divergence=""
  for r in "${results[@]}"; do
    if [[ "$r" =~ ^[0-9]+$ ]]; then
      compared=$((compared + r))
    elif [ -z "$divergence" ]; then  # a divergence, or a comparison that gave no answer at all
      [[ "$r" == divergence* ]] && divergence=${r#divergence } || divergence="0 a comparison that gave no result ('$r')"
    fi
  done
  if [ -n "$divergence" ]; then
    echo "$arch: first divergence at tick ${divergence%% *} in ${divergence#* }"
    status=1
  else
    echo "$arch: identical ($compared hashes compared)"
  fi
done
exit "$status"
