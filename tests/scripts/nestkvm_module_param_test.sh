#!/usr/bin/env bash
# scripts/nestkvm --module-param loads the VM's module with the parameter
# (the cross-host check's second KVM, kvm_amd npt=0, depends on it), refuses
# a malformed one before any VM starts, and reports a value the module
# refuses as a VM without /dev/kvm (125, the reason named).
#   tests/scripts/nestkvm_module_param_test.sh REPO
set -euo pipefail
repo=$1
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() {
  echo "FAIL: $*" >&2
  sed 's/^/  stdout: /' "$out" >&2
  sed 's/^/  stderr: /' "$err" >&2
  exit 1
}
nest() { rc=0; "$repo/scripts/nestkvm" --timeout 300 "$@" >"$out" 2>"$err" || rc=$?; }

# Taken: the module in the VM reports the value, and the other module's
# parameters are untouched.
nest --module-param kvm_amd.npt=0 --module-param kvm.halt_poll_ns=0 -- \
  cat /sys/module/kvm_amd/parameters/npt /sys/module/kvm/parameters/halt_poll_ns \
  /sys/module/kvm_amd/parameters/nested
[ "$rc" -eq 0 ] || fail "nestkvm exited with $rc"
[ "$(tr '\n' ' ' <"$out")" = "N 0 1 " ] || fail "npt, halt_poll_ns, nested read '$(tr '\n' ' ' <"$out")', not 'N 0 1 '"

# Malformed, or a module the VM does not load: refused at once, no VM.
for bad in npt=0 kvm_intel.ept=0 'kvm_amd.npt=0 x' kvm_amd.npt=; do
  start=$SECONDS
  nest --module-param "$bad" -- true
  [ "$rc" -eq 125 ] || fail "--module-param '$bad': exit $rc, not 125"
  grep -q "^nestkvm: --module-param wants kvm.NAME=VALUE or kvm_amd.NAME=VALUE, not '$bad'$" "$err" ||
    fail "--module-param '$bad': no refusal naming it"
  [ $((SECONDS - start)) -lt 5 ] || fail "--module-param '$bad': a VM started"
done

# Well-formed, but a value the module refuses: kvm_amd does not load.
nest --module-param kvm_amd.npt=maybe -- true
[ "$rc" -eq 125 ] || fail "kvm_amd.npt=maybe: exit $rc, not 125"
grep -q '^nestkvm: the VM came up without /dev/kvm (kvm_amd did not load' "$err" ||
  fail "kvm_amd.npt=maybe: no 'came up without /dev/kvm' line"
rm -rf "$(sed -n 's/.*see \(.*\)\/console.log)$/\1/p' "$err")"
echo "ok: kvm_amd.npt=0 and kvm.halt_poll_ns=0 taken; 4 malformed values refused; npt=maybe refused by the module"
