#!/usr/bin/env bash
# Host user-space instructions per hypercall exit, counted by callgrind for
# minivmm and for the bare KVM_RUN loop. Each side runs the null-hypercall
# guest with 1,000 and with 20,000 hypercalls; the difference of the two
# instruction totals divided by 19,000 is the cost of one exit, free of
# start-up and tear-down.
# The same for minivmm with the wasted-exit analysis on (minivmm-wasted),
# with exit sites on where RBP is 0, so each site is the RIP alone
# (minivmm-sites), and with sites where each walk reads 31 frames
# (minivmm-stacks, the null_hypercalls_frames guest): the cost per frame is
# (stacks - sites) / 31. And with each vCPU's last 16 exits kept
# (minivmm-recent, --recent-exits 16: what a debug build keeps by default).
#   bench/instructions_per_exit.sh [BUILD_DIR]
set -euo pipefail
build="${1:-build/release}"
bench="$build/bench/null_hypercall_bench"
small="$build/bench/null_hypercall_bench_1k"
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
count() {  # binary side -> instructions
  local out
  # --vgdb=no: in a chroot (as on the nested KVM) vgdb cannot create its FIFOs
  # and valgrind then reports nothing.
  out=$(valgrind --tool=callgrind --vgdb=no --callgrind-out-file=/dev/null "$1" --only "$2" 2>&1 >/dev/null)
  echo "$out" | sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
printf '%-16s %14s %14s %12s\n' side "1k run" "20k run" "per exit"
declare -A per
for side in bare minivmm minivmm-wasted minivmm-sites minivmm-stacks minivmm-recent; do
  a=$(count "$small" "$side"); b=$(count "$bench" "$side")
  per[$side]=$(awk -v a="$a" -v b="$b" 'BEGIN { print (b - a) / 19000 }')
  printf '%-16s %14s %14s %12.1f\n' "$side" "$a" "$b" "${per[$side]}"
done
met() { awk -v p="$1" -v t="$2" 'BEGIN { print (p <= t) ? "met" : "not met" }'; }
echo "target: minivmm <= 150 instructions per exit: $(met "${per[minivmm]}" 150)"
# The wasted-exit analysis (minivmm run --wasted) may add at most 10%.
limit=$(awk -v p="${per[minivmm]}" 'BEGIN { printf "%.1f", p * 1.10 }')
echo "target: minivmm-wasted <= 1.10 x minivmm = $limit: $(met "${per[minivmm-wasted]}" "$limit")"
# Exit sites (minivmm run --sites) with the RIP alone may add at most 15%;
# each frame of a walk costs what it costs, printed.
limit=$(awk -v p="${per[minivmm]}" 'BEGIN { printf "%.1f", p * 1.15 }')
echo "target: minivmm-sites <= 1.15 x minivmm = $limit: $(met "${per[minivmm-sites]}" "$limit")"
awk -v s="${per[minivmm-sites]}" -v d="${per[minivmm-stacks]}" \
  'BEGIN { printf "cost per frame of a walk: %.1f instructions ((stacks - sites) / 31)\n", (d - s) / 31 }'
awk -v r="${per[minivmm-recent]}" -v p="${per[minivmm]}" \
  'BEGIN { printf "cost of the ring of recent exits: %.1f instructions per exit (recent - minivmm)\n", r - p }'
