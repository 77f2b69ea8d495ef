#!/usr/bin/env bash
# Start-up cost of the PC machine against QEMU's, on the KVM this runs on:
# the wall time from start to the debug exit of a small Multiboot guest
# (tests/pc_guests/pc_entry.elf, which prints its boot state and exits with
# code 0) under minivmm and under QEMU with kvm-unit-tests' argv, in one run,
# as a ratio of medians. Target: minivmm at most 0.5x QEMU.
#
#   bench/pc_startup.sh [BUILD_DIR] [N]     (default build/release, 20)
#
#   A = BUILD_DIR/minivmm run --machine pc -q --memory 128M
#         --kernel BUILD_DIR/pc_guests/pc_entry.elf --cmdline exit=0
#   B = $QEMU (default qemu-system-x86_64) -nodefaults -device pc-testdev
#         -device isa-debug-exit,iobase=0xf4,iosize=0x4 -vnc none -serial stdio
#         -machine accel=kvm -m 128 -kernel <the same ELF> -append exit=0
#
# N runs of each, interleaved A B B A after one untimed run of each (page
# cache, QEMU's firmware files). Each run must exit with status 1 (guest code
# 0 through isa-debug-exit) and print "done"; anything else stops the bench
# with status 1 and the run's output. Wall time is fork to wait, read from
# bash's $EPOCHREALTIME (microseconds, no process of its own). Prints min,
# median, max and the half-range (spread) of each side, the ratio of the
# medians A/B and the spread of the per-pair ratios (each A over the B beside
# it). Needs a usable /dev/kvm: on a host without one, run it on the nested
# KVM, scripts/nestkvm -- bench/pc_startup.sh build/release.
set -euo pipefail
build="${1:-build/release}"
n="${2:-20}"
qemu="${QEMU:-qemu-system-x86_64}"
minivmm="$build/minivmm"
elf="$build/pc_guests/pc_entry.elf"
target=0.5

die() { echo "pc_startup: $*" >&2; exit 1; }
[[ "$n" =~ ^[1-9][0-9]*$ ]] || die "the repetition count must be a positive integer, not '$n'"
[ -x "$minivmm" ] || die "no $minivmm (cmake --build --preset release --target minivmm minivmm_pc_guests)"
[ -f "$elf" ] || die "no $elf (cmake --build --preset release --target minivmm_pc_guests)"
command -v "$qemu" >/dev/null || die "no $qemu on PATH (Debian's qemu-system-x86)"
[ -r /dev/kvm ] && [ -w /dev/kvm ] || die "no usable /dev/kvm (run it inside scripts/nestkvm)"

a_cmd=("$minivmm" run --machine pc -q --memory 128M --kernel "$elf" --cmdline exit=0)
b_cmd=("$qemu" -nodefaults -device pc-testdev -device isa-debug-exit,iobase=0xf4,iosize=0x4
  -vnc none -serial stdio -machine accel=kvm -m 128 -kernel "$elf" -append exit=0)

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
declare -a a_us b_us

# run SIDE: one timed run; its microseconds are appended to SIDE's list.
run() {
  local side=$1 t0 t1 status=0
  local -n cmd="${side}_cmd" times="${side}_us"
  t0=${EPOCHREALTIME/./}
  "${cmd[@]}" >"$scratch/out" 2>&1 </dev/null || status=$?
  t1=${EPOCHREALTIME/./}
  if [ "$status" -ne 1 ] || ! grep -qx $'done\r\\?' "$scratch/out"; then
    echo "pc_startup: $side ended with status $status (want 1) or without 'done':" >&2
    echo "  ${cmd[*]}" >&2
    cat "$scratch/out" >&2
    exit 1
  fi
  times+=($((t1 - t0)))
}

run a; run b; a_us=(); b_us=()  # untimed
for ((i = 0; i < n; i += 2)); do
  run a; run b
  ((i + 1 < n)) && { run b; run a; }
done

# summary V...: "min median max half-range%" of the values.
summary() {
  printf '%s\n' "$@" | sort -g | awk '
    { v[NR] = $1 }
    END {
      med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      print v[1], med, v[NR], 100 * (v[NR] - v[1]) / 2 / med
    }'
}

read -r a_min a_med a_max a_spread <<<"$(summary "${a_us[@]}")"
read -r b_min b_med b_max b_spread <<<"$(summary "${b_us[@]}")"
ratios=()
for ((i = 0; i < n; i++)); do
  ratios+=("$(awk -v a="${a_us[i]}" -v b="${b_us[i]}" 'BEGIN { printf "%.4f", a / b }')")
done
read -r r_min r_med r_max r_spread <<<"$(summary "${ratios[@]}")"

kvm=$(grep -o -m1 -E '^kvm_(amd|intel|pvm)' /proc/modules 2>/dev/null || echo "an unknown KVM")
echo "pc_startup: $n runs each, interleaved A B B A, on $kvm"
echo "  A: ${a_cmd[*]}"
echo "  B: ${b_cmd[*]}"
awk -v am="$a_min" -v ad="$a_med" -v ax="$a_max" -v as="$a_spread" \
    -v bm="$b_min" -v bd="$b_med" -v bx="$b_max" -v bs="$b_spread" \
    -v rm="$r_min" -v rd="$r_med" -v rx="$r_max" -v t="$target" 'BEGIN {
  printf "%-14s %9s %9s %9s  %s\n", "wall ms", "min", "median", "max", "spread (half-range/median)"
  printf "%-14s %9.2f %9.2f %9.2f  +-%.1f%%\n", "A minivmm", am / 1000, ad / 1000, ax / 1000, as
  printf "%-14s %9.2f %9.2f %9.2f  +-%.1f%%\n", "B QEMU", bm / 1000, bd / 1000, bx / 1000, bs
  r = ad / bd
  printf "ratio of medians A/B: %.3fx (per-pair A/B: min %.3f, median %.3f, max %.3f)\n", r, rm, rd, rx
  printf "target <= %.1fx: %s\n", t, (r <= t) ? "met" : "missed"
}'
