#!/usr/bin/env bash
# lockstep_netsim leaves nothing where it runs: the scenarios that desync on purpose write real
# evidence, into a temporary folder it removes — or, with --evidence-dir, into the folder named.
set -euo pipefail
netsim=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/cwd" "$work/tmp" "$work/kept"
cd "$work/cwd"
# Scenario 5 desyncs on purpose (and resyncs), so the host writes a bundle of everyone's evidence.
TMPDIR="$work/tmp" "$netsim" --scenario 5 > "$work/out.txt"
if [ -n "$(ls -A "$work/cwd")" ] || [ -n "$(ls -A "$work/tmp")" ]; then
  echo "FAILED: lockstep_netsim left files behind:"; ls -A "$work/cwd" "$work/tmp"; exit 1
fi
TMPDIR="$work/tmp" "$netsim" --scenario 5 --evidence-dir "$work/kept" > "$work/out-kept.txt"
if ! grep -q '^lockstep-desync-' <<<"$(ls "$work/kept")"; then
  echo "FAILED: no evidence in --evidence-dir (scenario 5 desyncs on purpose)"; exit 1
fi
if [ -n "$(ls -A "$work/cwd")" ]; then echo "FAILED: files left in the working folder"; exit 1; fi
echo "ok: $(ls "$work/kept" | wc -l) evidence bundles kept where asked, none left elsewhere"
