#!/usr/bin/env bash
# Long fuzzing runs: each target for RUNS executions (default 10 million),
# continuing from a persistent corpus in the fuzz build dir (seeded from
# fuzz/corpus/<target>/). Targets run in parallel, one per core.
#
#   scripts/fuzz-long.sh                   all targets, 10M executions each
#   scripts/fuzz-long.sh multicall 50000000
#   FUZZ_BUILD_DIR=/tmp/bf FUZZ_JOBS=1 scripts/fuzz-long.sh all 1000000
#
# A crash stops that target; its input is saved as
# <build>/long/<target>/crash-* and printed at the end. Fix it, then keep the
# input under fuzz/regressions/<target>/ so fuzz/run-short.sh replays it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${FUZZ_BUILD_DIR:-${ROOT}/build-fuzz}"
TARGET="${1:-all}"
RUNS="${2:-10000000}"
JOBS="${FUZZ_JOBS:-$(nproc)}"
ALL="hypercall_dispatcher multicall descriptor elf_loader multiboot uart port_bus frame_walk symbolizer"
[[ "${TARGET}" == all ]] && TARGETS="${ALL}" || TARGETS="${TARGET}"

if [[ ! -f "${BUILD_DIR}/build.ninja" && ! -f "${BUILD_DIR}/Makefile" ]]; then
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "${ROOT}/fuzz" -B "${BUILD_DIR}" "${generator[@]}" >/dev/null
fi
cmake --build "${BUILD_DIR}" -j"$(nproc)"

run_one() {
  local target="$1" dir="${BUILD_DIR}/long/$1"
  mkdir -p "${dir}/corpus"
  local start=$SECONDS
  if "${BUILD_DIR}/fuzz_${target}" "${dir}/corpus" "${ROOT}/fuzz/corpus/${target}" \
      -runs="${RUNS}" -print_final_stats=1 -artifact_prefix="${dir}/" \
      >"${dir}/fuzz.log" 2>&1; then
    echo "ok   ${target}: $(sed -n 's/^stat::number_of_executed_units: *//p' "${dir}/fuzz.log")" \
         "executions in $((SECONDS - start)) s, corpus $(ls "${dir}/corpus" | wc -l) inputs"
  else
    echo "FAIL ${target} after $((SECONDS - start)) s: see ${dir}/fuzz.log;" \
         "input: $(ls "${dir}"/crash-* "${dir}"/leak-* "${dir}"/timeout-* "${dir}"/oom-* 2>/dev/null | head -1)"
    return 1
  fi
}

status=0
pids=()
for target in ${TARGETS}; do
  while (($(jobs -rp | wc -l) >= JOBS)); do wait -n || status=1; done
  run_one "${target}" &
done
while (($(jobs -rp | wc -l) > 0)); do wait -n || status=1; done
wait || status=1
exit ${status}
