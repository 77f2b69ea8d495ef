#!/usr/bin/env bash
# One command from a fresh Debian 12 machine, with or without /dev/kvm:
#   scripts/quickstart.sh          install what is missing, build, run the default guest
#                                  (on a nested kvm_amd when this host has no /dev/kvm)
#   scripts/quickstart.sh test     install what is missing, build, run every test:
#                                  the whole-VM tests on every KVM reachable (the host's
#                                  /dev/kvm if usable, and always a nested kvm_amd), the
#                                  cross-host check, the suite under ASan + UBSan, then
#                                  the tests with several vCPU threads under TSan
# Extra arguments after `run` go to `minivmm run`; after `test`, to every ctest.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-run}"
[ $# -gt 0 ] && shift

say() { echo "quickstart: $*" >&2; }

packages=(
  cmake ninja-build g++ pkg-config
  linux-libc-dev libabsl-dev libfmt-dev libcli11-dev nlohmann-json3-dev nettle-dev libdw-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-matplotlib pybind11-dev python3-pytest python3-pandas valgrind clang-14 qemu-system-x86
  busybox-static cpio  # the nested KVM's initramfs (scripts/nestkvm)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# A usable /dev/kvm: present, and this user may open it read-write.
host_kvm=no
[ -c /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ] && host_kvm=yes

build() {
  cmake --preset "$1" >/dev/null
  cmake --build --preset "$1"
}

# The KVM module behind the /dev/kvm `minivmm info` talks to.
kvm_name() {
  "$@" build/debug/minivmm info 2>/dev/null | grep -o -m1 -E 'kvm_(pvm|amd|intel)' || echo unknown
}

# ctest with a JUnit report; prints nothing extra. $1 = preset, $2 = report, rest = ctest args.
results=()  # "what|report" pairs, summarised at the end
run_ctest() {
  local preset=$1 report=$2
  shift 2
  ctest --preset "$preset" --output-on-failure --output-junit "$PWD/$report" "$@"
}

# "N passed, F failed, S skipped" from a ctest JUnit report.
summary() {
  python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
passed = failed = skipped = 0
for c in cases:
    if c.find("failure") is not None or c.find("error") is not None or c.get("status") == "fail":
        failed += 1
    elif c.find("skipped") is not None or c.get("status") in ("notrun", "disabled"):
        skipped += 1
    else:
        passed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
}

case "$mode" in
  run)
    build debug
    if [ "$host_kvm" = yes ]; then
      exec build/debug/minivmm run "$@"
    fi
    say "this host has no usable /dev/kvm; running the guest on a nested kvm_amd (scripts/nestkvm)"
    exec scripts/nestkvm -- build/debug/minivmm run "$@"
    ;;
  test)
    build debug
    mkdir -p build/test-results
    rm -f build/test-results/*.xml build/test-results/*.json
    # The nested VM's kernel and initramfs, built once from Debian packages.
    # Without it there may be no KVM at all: then nothing below can pass.
    if ! scripts/nestkvm --prepare; then
      if [ "$host_kvm" = no ]; then
        say "FAILED: no KVM reachable: this host has no usable /dev/kvm and the nested kvm_amd could not start (above)"
      else
        say "FAILED: the nested kvm_amd could not start (above); every test runs on it too"
      fi
      exit 1
    fi
    nested=(scripts/nestkvm --timeout 2400 --)
    nested_kvm=$(kvm_name "${nested[@]}")
    # The SMP stress test runs 1000 VM lifecycles on the host's KVM; on the
    # nested one, where every exit costs ~10x, this many (tests/integration/smp_test.cc).
    export MINIVMM_SMP_STRESS_LIFECYCLES=200

    # 1. debug: unit tests here; whole-VM tests (label vm) on the host's KVM
    #    and on the nested one.
    run_ctest debug build/test-results/debug-unit.xml -LE vm -j "$(nproc)" "$@"
    results+=("debug unit tests (no KVM needed)|build/test-results/debug-unit.xml")
    if [ "$host_kvm" = yes ]; then
      host_name=$(kvm_name)
      run_ctest debug build/test-results/debug-vm-host.xml -L vm -LE cross_host -j "$(nproc)" "$@"
      results+=("debug whole-VM tests on $host_name (this host)|build/test-results/debug-vm-host.xml")
    else
      say "this host has no usable /dev/kvm: whole-VM tests run on the nested $nested_kvm only"
    fi
    "${nested[@]}" ctest --preset debug --output-on-failure \
      --output-junit "$PWD/build/test-results/debug-vm-nested.xml" -L vm -LE cross_host -j 1 "$@"
    results+=("debug whole-VM tests on $nested_kvm (nested)|build/test-results/debug-vm-nested.xml")

    # 2. The cross-host check: the bench matrix on every KVM reached, every
    #    count equal or following its documented formula.
    bench=(build/debug/minivmm bench --backend both --repeat 1 --quiet
           --workloads ctx,ctx:tls=same,pipe,irq,cpa,fpu)
    bench_records=()  # absolute: ctest runs the test in the build tree
    if [ "$host_kvm" = yes ]; then
      "${bench[@]}" --json "$PWD/build/test-results/bench-$host_name.json" >/dev/null
      bench_records+=("$PWD/build/test-results/bench-$host_name.json")
    fi
    "${nested[@]}" "${bench[@]}" --json "$PWD/build/test-results/bench-nested-$nested_kvm.json" >/dev/null
    bench_records+=("$PWD/build/test-results/bench-nested-$nested_kvm.json")
    MINIVMM_CROSS_HOST_RECORDS="$(IFS=:; echo "${bench_records[*]}")" \
      run_ctest debug build/test-results/cross-host.xml -L cross_host "$@"
    results+=("cross-host check over ${#bench_records[@]} KVM(s)|build/test-results/cross-host.xml")

    # 3. The same suite again with AddressSanitizer and UBSan (the guest and
    #    the fuzzers keep their own flags), whole-VM tests wherever the debug
    #    ones ran.
    build asan
    run_ctest asan build/test-results/asan-unit.xml -LE vm -j "$(nproc)" "$@"
    results+=("asan unit tests|build/test-results/asan-unit.xml")
    if [ "$host_kvm" = yes ]; then
      run_ctest asan build/test-results/asan-vm-host.xml -L vm -LE cross_host -j "$(nproc)" "$@"
      results+=("asan whole-VM tests on $host_name (this host)|build/test-results/asan-vm-host.xml")
    else
      "${nested[@]}" ctest --preset asan --output-on-failure \
        --output-junit "$PWD/build/test-results/asan-vm-nested.xml" -L vm -LE cross_host -j 1 "$@"
      results+=("asan whole-VM tests on $nested_kvm (nested)|build/test-results/asan-vm-nested.xml")
    fi

    # 4. The tests with several vCPU or VM threads (label smp) under
    #    ThreadSanitizer, which fails a test on any report (the tsan test
    #    preset's TSAN_OPTIONS); only what they need is built. On the host's
    #    KVM and on the nested one.
    cmake --preset tsan >/dev/null
    cmake --build --preset tsan --target smp_test_binaries
    if [ "$host_kvm" = yes ]; then
      run_ctest tsan build/test-results/tsan-smp-host.xml -L smp -j "$(nproc)" "$@"
      results+=("tsan smp tests on $host_name (this host)|build/test-results/tsan-smp-host.xml")
    fi
    "${nested[@]}" ctest --preset tsan --output-on-failure \
      --output-junit "$PWD/build/test-results/tsan-smp-nested.xml" -L smp -j 1 "$@"
    results+=("tsan smp tests on $nested_kvm (nested)|build/test-results/tsan-smp-nested.xml")

    echo
    total_passed=0 total_failed=0 total_skipped=0
    for r in "${results[@]}"; do
      line=$(summary "${r#*|}")
      printf 'quickstart: %-58s %s\n' "${r%%|*}" "$line"
      read -r p _ f _ k _ <<<"${line//,/}"
      total_passed=$((total_passed + p)) total_failed=$((total_failed + f))
      total_skipped=$((total_skipped + k))
    done
    kvms="$nested_kvm (nested)"
    [ "$host_kvm" = yes ] && kvms="$host_name (this host) and $kvms"
    echo "quickstart: whole-VM tests ran on $kvms"
    echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
    ;;
  *)
    echo "usage: scripts/quickstart.sh [run [minivmm run flags...] | test [ctest flags...]]" >&2
    exit 2
    ;;
esac
