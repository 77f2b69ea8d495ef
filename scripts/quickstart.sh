#!/usr/bin/env bash
# One command from a fresh Debian 12 machine, with or without /dev/kvm:
#   scripts/quickstart.sh          install what is missing, build, run the default guest
#                                  (on a nested kvm_amd when this host has no /dev/kvm)
#   scripts/quickstart.sh test     install what is missing, build, run every test:
#                                  the whole-VM tests on every KVM reachable (the host's
#                                  /dev/kvm if usable, and always a nested kvm_amd), the
#                                  cross-host check (where the host has no /dev/kvm, its
#                                  second KVM is the nested kvm_amd with npt=0, which
#                                  runs only the bench matrix), the suite under ASan + UBSan, then
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
  libtracefs-dev libtraceevent-dev  # --kernel-exits: KVM's tracepoints
  libbpf-dev bpftool  # --kernel-exits --sites: the BPF program that walks the guest's frames
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
    # t0 times each step.
    t0=$SECONDS
    took() { say "$1 took $((SECONDS - t0)) s"; t0=$SECONDS; }
    build debug
    took "the debug build"
    mkdir -p build/test-results
    rm -f build/test-results/*.xml build/test-results/*.json build/test-results/*.log \
      build/test-results/*.ready build/test-results/nested-stalls
    # Each ctest run gets its own scratch directory (gtest's TEST_TMPDIR, and
    # the install tests' prefix): the host's runs and the nested ones share
    # this file system and run at the same time.
    rm -rf build/test-tmp
    scratch() { mkdir -p "$PWD/build/test-tmp/$1" && echo "$PWD/build/test-tmp/$1"; }
    # The install tests that need no KVM (label install without vm: the
    # package installed into a prefix, its headers, the CLI's includes, the
    # two examples built) run once per build tree, into its own directory;
    # the examples' runs (label vm) on each KVM only read it. -FS: ctest adds
    # no fixture setup to a run, which would install and build them again
    # (on the nested KVM a compile takes ~20x as long).
    no_setups=(-FS '^install_')
    # The same for `minivmm report`'s pages (label report, tests/report): the
    # whole-VM runs on each KVM make the records (ReportRecord, label vm),
    # into a directory per build preset and KVM; the pages are drawn once
    # per preset, here, from one KVM's records (a page is a function of its
    # record; a matplotlib start costs ~40 s on the nested KVM).
    report_pages() {  # $1 = preset, $2 = whose records (host or nested), rest = ctest args
      local preset=$1 kvm=$2
      shift 2
      MINIVMM_REPORT_RECORDS="$(scratch "$preset-records-$kvm")" \
        TEST_TMPDIR="$(scratch "host-$preset-report")" \
        run_ctest "$preset" "build/test-results/$preset-report.xml" -L report -FS '^report_' \
        -j "$(nproc)" "$@"
      results+=("$preset report pages of the $kvm KVM's records|build/test-results/$preset-report.xml")
    }
    install_tests() {  # $1 = preset, rest = ctest args
      local preset=$1
      shift
      MINIVMM_INSTALL_TEST_DIR="$(scratch "$preset-install")" \
        TEST_TMPDIR="$(scratch "host-$preset-install")" \
        run_ctest "$preset" "build/test-results/$preset-install.xml" -L install -LE vm \
        -j "$(nproc)" "$@"
      results+=("$preset install tests (no KVM needed)|build/test-results/$preset-install.xml")
    }
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
    # A step's time limit on it: its debug whole-VM tests took 1600-2650 s.
    nested=(scripts/nestkvm --timeout 4500 --)
    install_tests debug "$@"
    took "debug install tests"
    nested_kvm=$(kvm_name "${nested[@]}")
    # The SMP stress test runs 1000 VM lifecycles on the host's KVM; on the
    # nested one, where every exit costs ~10x, this many (tests/integration/smp_test.cc).
    # The same for the leak test's VM lifecycles (tests/leak).
    export MINIVMM_SMP_STRESS_LIFECYCLES=200 MINIVMM_LEAK_TEST_VMS=200
    # The counted guest: the cross-host test holds the exits against the
    # guest's own counts too.
    bench=(build/debug/minivmm bench --backend both --repeat 1 --quiet --guest-counters on
           --workloads ctx,ctx:tls=same,pipe,irq,cpa,fpu)

    # The nested kvm_amd is one TCG vCPU: one host core. Its steps run in the
    # background, in this order, while this host runs its own on the other
    # cores; its output goes to build/test-results/nested.log and is printed
    # when it ends. It waits for the asan and tsan builds (the *.ready files).
    # A step whose VM stalled (nestkvm's status 123: its kernel stopped, so
    # no test could end; docs/hosts.md) runs once more, from the start, in a
    # new VM, and says so; a second stall, like any failure, fails it.
    nested_step() {
      local rc=0
      "${nested[@]}" "$@" || rc=$?
      [ "$rc" -eq 123 ] || return "$rc"
      echo stalled >>build/test-results/nested-stalls
      say "nested: the VM stalled (above); this step runs again, from its start, in a new VM"
      "${nested[@]}" "$@"
    }
    # Where the host has no KVM, the asan whole-VM tests, the longest nested
    # step, run in two halves, each in a VM of its own on one core: every
    # other test of the list (half 1 or 2; ctest -I numbers positions in the
    # list its other filters select, and adds the fixture setups each half
    # needs). $1 = the half, rest = the user's ctest args.
    asan_vm_half() {
      local half=$1 n
      shift
      n=$(ctest --preset asan -N -L vm -LE cross_host -FS '^install_' "$@" | sed -n 's/^Total Tests: //p')
      echo "0,0,0,$(seq -s, "$half" 2 "$n")"
    }
    # One half, $1, on the nested KVM (the other with the same
    # configuration in a second VM): its records with the other half's.
    nested_asan_half() {
      local half=$1
      shift
      nested_step env TEST_TMPDIR="$(scratch "nested-asan-$half")" \
        MINIVMM_INSTALL_TEST_DIR="$(scratch asan-install)" \
        MINIVMM_REPORT_RECORDS="$(scratch asan-records-nested)" ctest --preset asan \
        --output-on-failure --output-junit "$PWD/build/test-results/asan-vm-nested-$half.xml" \
        -L vm -LE cross_host -FS '^install_' -I "$(asan_vm_half "$half" "$@")" -j 1 "$@"
    }
    nested_steps() {
      set -euo pipefail
      local t0=$SECONDS
      nested_step env TEST_TMPDIR="$(scratch nested-debug)" \
        MINIVMM_INSTALL_TEST_DIR="$(scratch debug-install)" \
        MINIVMM_REPORT_RECORDS="$(scratch debug-records-nested)" ctest --preset debug \
        --output-on-failure --output-junit "$PWD/build/test-results/debug-vm-nested.xml" \
        -L vm -LE cross_host -FS '^install_' -j 1 "$@"
      say "nested: debug whole-VM tests took $((SECONDS - t0)) s"; t0=$SECONDS
      nested_step "${bench[@]}" --json "$PWD/build/test-results/bench-nested-$nested_kvm.json" >/dev/null
      say "nested: the bench matrix took $((SECONDS - t0)) s"; t0=$SECONDS
      if [ "$host_kvm" = no ]; then
        until [ -e build/test-results/asan.ready ]; do sleep 5; done
        nested_asan_half 1 "$@"
        say "nested: asan whole-VM tests, half 1 of 2, took $((SECONDS - t0)) s"; t0=$SECONDS
      fi
      until [ -e build/test-results/tsan.ready ]; do sleep 5; done
      nested_step env TEST_TMPDIR="$(scratch nested-tsan)" ctest --preset tsan \
        --output-on-failure --output-junit "$PWD/build/test-results/tsan-smp-nested.xml" \
        -L smp -j 1 "$@"
      say "nested: tsan smp tests took $((SECONDS - t0)) s"
    }
    nested_log=build/test-results/nested.log
    # A session of its own, so that stopping this script stops all of it
    # (nestkvm kills its QEMU on SIGTERM).
    export -f nested_steps nested_step nested_asan_half asan_vm_half scratch say
    export host_kvm nested_kvm
    nested_pid=""
    second_pid=""  # the second nested VM's bench (step 4), where the host has no KVM
    trap '[ -n "$nested_pid" ] && kill -TERM -- -"$nested_pid" 2>/dev/null
          [ -n "$second_pid" ] && pkill -TERM -P "$second_pid" 2>/dev/null; true' EXIT
    NESTED="${nested[*]}" BENCH="${bench[*]}" setsid bash -c \
      'nested=($NESTED) bench=($BENCH); nested_steps "$@"' nested_steps "$@" >"$nested_log" 2>&1 &
    nested_pid=$!
    say "the nested $nested_kvm's tests run in the background (output: $nested_log)"

    took "preparing the nested $nested_kvm"
    # 1. debug: unit tests here; whole-VM tests (label vm) on the host's KVM.
    TEST_TMPDIR="$(scratch host-debug-unit)" run_ctest debug build/test-results/debug-unit.xml \
      -LE '^(vm|install|report)$' -j "$(nproc)" "$@"
    results+=("debug unit tests (no KVM needed)|build/test-results/debug-unit.xml")
    took "debug unit tests"
    if [ "$host_kvm" = yes ]; then
      host_name=$(kvm_name)
      TEST_TMPDIR="$(scratch host-debug)" MINIVMM_INSTALL_TEST_DIR="$(scratch debug-install)" \
        MINIVMM_REPORT_RECORDS="$(scratch debug-records-host)" \
        run_ctest debug build/test-results/debug-vm-host.xml \
        -L vm -LE cross_host "${no_setups[@]}" -j "$(nproc)" "$@"
      results+=("debug whole-VM tests on $host_name (this host)|build/test-results/debug-vm-host.xml")
      took "debug whole-VM tests on $host_name"
      report_pages debug host "$@"
      took "debug report pages"
      # The cross-host check's record from this host (the check itself is last).
      "${bench[@]}" --json "$PWD/build/test-results/bench-$host_name.json" >/dev/null
      took "the bench matrix on $host_name"
    else
      say "this host has no usable /dev/kvm: whole-VM tests run on the nested $nested_kvm only"
    fi
    results+=("debug whole-VM tests on $nested_kvm (nested)|build/test-results/debug-vm-nested.xml")

    # 2. The tests with several vCPU or VM threads (label smp) under
    #    ThreadSanitizer, which fails a test on any report (the tsan test
    #    preset's TSAN_OPTIONS); only what they need is built. Built first,
    #    for the nested KVM waits for it.
    cmake --preset tsan >/dev/null
    cmake --build --preset tsan --target smp_test_binaries
    touch build/test-results/tsan.ready
    took "the tsan build"

    # 3. The same suite again with AddressSanitizer and UBSan (the guest and
    #    the fuzzers keep their own flags), whole-VM tests on the host's KVM,
    #    or on the nested one where the host has none.
    build asan
    took "the asan build"
    install_tests asan "$@"
    touch build/test-results/asan.ready
    took "asan install tests"
    TEST_TMPDIR="$(scratch host-asan-unit)" run_ctest asan build/test-results/asan-unit.xml \
      -LE '^(vm|install|report)$' -j "$(nproc)" "$@"
    results+=("asan unit tests|build/test-results/asan-unit.xml")
    took "asan unit tests"
    if [ "$host_kvm" = yes ]; then
      TEST_TMPDIR="$(scratch host-asan-vm)" MINIVMM_INSTALL_TEST_DIR="$(scratch asan-install)" \
        MINIVMM_REPORT_RECORDS="$(scratch asan-records-host)" \
        run_ctest asan build/test-results/asan-vm-host.xml \
        -L vm -LE cross_host "${no_setups[@]}" -j "$(nproc)" "$@"
      results+=("asan whole-VM tests on $host_name (this host)|build/test-results/asan-vm-host.xml")
      took "asan whole-VM tests on $host_name"
      report_pages asan host "$@"
      took "asan report pages"
      TEST_TMPDIR="$(scratch host-tsan)" run_ctest tsan build/test-results/tsan-smp-host.xml \
        -L smp -j "$(nproc)" "$@"
      results+=("tsan smp tests on $host_name (this host)|build/test-results/tsan-smp-host.xml")
      took "tsan smp tests on $host_name"
    else
      results+=("asan whole-VM tests on $nested_kvm (nested), half 1|build/test-results/asan-vm-nested-1.xml")
      results+=("asan whole-VM tests on $nested_kvm (nested), half 2|build/test-results/asan-vm-nested-2.xml")
    fi
    results+=("tsan smp tests on $nested_kvm (nested)|build/test-results/tsan-smp-nested.xml")

    # 4. Where this host has no KVM of its own, the cross-host check's
    #    second KVM is another configuration of the nested one: kvm_amd with
    #    npt=0, KVM's shadow MMU instead of nested paging (docs/hosts.md). Only
    #    the bench matrix runs there, in a second nested VM on the core this
    #    host's own steps leave idle from here on; then, on that core, the
    #    second half of the asan whole-VM tests, in a VM of the first's
    #    configuration.
    if [ "$host_kvm" = no ]; then
      second=(scripts/nestkvm --timeout 2400 --module-param kvm_amd.npt=0 --)
      second_kvm="kvm_amd npt=0"
      second_record="$PWD/build/test-results/bench-nested-kvm_amd-npt0.json"
      second_log=build/test-results/nested-npt0.log
      second_step() {  # as nested_step: a stalled VM (123) runs once more
        local rc=0
        "${second[@]}" "${bench[@]}" --json "$second_record" >/dev/null || rc=$?
        [ "$rc" -eq 123 ] || return "$rc"
        echo stalled >>build/test-results/nested-stalls
        say "nested ($second_kvm): the VM stalled (above); the bench runs again in a new VM"
        "${second[@]}" "${bench[@]}" --json "$second_record" >/dev/null
      }
      second_steps() {
        local t0=$SECONDS
        second_step
        say "nested ($second_kvm): the bench matrix took $((SECONDS - t0)) s"; t0=$SECONDS
        nested_asan_half 2 "$@"
        say "nested: asan whole-VM tests, half 2 of 2, took $((SECONDS - t0)) s"
      }
      second_steps "$@" >"$second_log" 2>&1 &
      second_pid=$!
      say "the bench matrix on the nested $second_kvm, then half the asan whole-VM tests on the nested $nested_kvm, run in the background (output: $second_log)"
    fi

    # 5. The nested KVM's steps end; then the cross-host check: the bench
    #    matrix on every KVM reached, every count equal or following its
    #    documented formula.
    nested_rc=0
    wait "$nested_pid" || nested_rc=$?
    nested_pid=""
    took "waiting for the nested $nested_kvm"
    say "the nested $nested_kvm's output ($nested_log):"
    cat "$nested_log"
    if [ "$nested_rc" -ne 0 ]; then
      # What failed, last, where a reader of the output's end sees it.
      say "the nested $nested_kvm's failed or unfinished tests and steps:"
      grep -E '\*\*\*(Failed|Timeout|Exception|Not Run)|^ *Start +[0-9]+:|^nestkvm: |^quickstart: nested: ' \
        "$nested_log" | awk '/Start +[0-9]+:/ { last = $0; next } { print } END { if (last) print "last started:" last }' |
        tail -n 40
      say "FAILED: a step on the nested $nested_kvm failed (exit status $nested_rc, output above)"
      exit 1
    fi
    if [ "$host_kvm" = no ]; then
      second_rc=0
      wait "$second_pid" || second_rc=$?
      second_pid=""
      took "waiting for the second nested VM's steps"
      say "the second nested VM's output ($second_log):"
      cat "$second_log"
      if [ "$second_rc" -ne 0 ]; then
        say "the second nested VM's failed or unfinished tests and steps:"
        grep -E '\*\*\*(Failed|Timeout|Exception|Not Run)|^ *Start +[0-9]+:|^nestkvm: |^quickstart: nested' \
          "$second_log" | awk '/Start +[0-9]+:/ { last = $0; next } { print } END { if (last) print "last started:" last }' |
          tail -n 40
        say "FAILED: a step of the second nested VM failed (exit status $second_rc, output above)"
        exit 1
      fi
      report_pages debug nested "$@"
      report_pages asan nested "$@"
      took "the report pages of the nested $nested_kvm's records"
    fi
    bench_records=()  # absolute: ctest runs the test in the build tree
    [ "$host_kvm" = yes ] && bench_records+=("$PWD/build/test-results/bench-$host_name.json")
    bench_records+=("$PWD/build/test-results/bench-nested-$nested_kvm.json")
    [ "$host_kvm" = no ] && bench_records+=("$second_record")
    MINIVMM_CROSS_HOST_RECORDS="$(IFS=:; echo "${bench_records[*]}")" \
      run_ctest debug build/test-results/cross-host.xml -L cross_host "$@"
    results+=("cross-host check over ${#bench_records[@]} KVM(s)|build/test-results/cross-host.xml")
    rm -rf build/test-tmp

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
    [ "$host_kvm" = no ] &&
      echo "quickstart: the cross-host check compared the nested $nested_kvm with the nested $second_kvm (bench matrix only)"
    if [ -f build/test-results/nested-stalls ]; then
      echo "quickstart: the nested VM stalled $(wc -l <build/test-results/nested-stalls) time(s); each such step ran again, whole, in a new VM"
    fi
    echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
    ;;
  *)
    echo "usage: scripts/quickstart.sh [run [minivmm run flags...] | test [ctest flags...]]" >&2
    exit 2
    ;;
esac
