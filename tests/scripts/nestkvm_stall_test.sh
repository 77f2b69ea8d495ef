#!/usr/bin/env bash
# scripts/nestkvm tells a stalled VM from a slow job by its heartbeat: a job
# that stops the heartbeat (SIGSTOP to the sleep of /init's heartbeat loop,
# as a stalled kernel stops every task) and then waits far longer than
# --stall must end, killed, with status 123, the stall message and the kept
# console log named, well before its own end or --timeout. (That a live VM
# is not killed, every nested step of the test command shows: each runs far
# longer than the default --stall.)
#   tests/scripts/nestkvm_stall_test.sh REPO
set -euo pipefail
repo=$1
err=$(mktemp)
trap 'rm -f "$err"' EXIT
start=$SECONDS
rc=0
"$repo/scripts/nestkvm" --stall 10 --timeout 600 -- \
  bash -c 'sleep 2; pkill -STOP -x sleep; echo heartbeat stopped; sleep 300; echo not killed' \
  >/dev/null 2>"$err" || rc=$?
took=$((SECONDS - start))
fail() {
  echo "FAIL: $*" >&2
  sed 's/^/  stderr: /' "$err" >&2
  exit 1
}
[ "$rc" -eq 123 ] || fail "nestkvm exited with $rc, not 123 (the VM stalled)"
grep -q 'nestkvm: the VM stalled: no heartbeat for 10 s' "$err" || fail "no stall message"
console=$(sed -n 's/.*(its kernel stopped; console: \(.*\))$/\1/p' "$err")
{ [ -n "$console" ] && [ -f "$console" ]; } || fail "the console log it names is not kept: '$console'"
rm -rf "$(dirname "$console")"
# Boot, 2 s, then at most 10 s of silence and one 10-s poll more: far
# below the job's 300 s.
[ "$took" -lt 120 ] || fail "took $took s to notice"
echo "ok: a stopped heartbeat ended the VM with 123 after $took s"
