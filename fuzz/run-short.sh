#!/usr/bin/env bash
# Short fuzzing for CI: builds the fuzz project (clang-14, ASan + UBSan +
# libFuzzer) if needed, replays every kept regression input, then fuzzes each
# target for FUZZ_SECONDS (default 10) starting from its seed corpus, as
# many targets at a time as there are cores. New
# corpus entries and crash artifacts go to a scratch dir, never the repo.
#
#   fuzz/run-short.sh [BUILD_DIR]        default: build-fuzz in the repo root
#   FUZZ_SECONDS=5 fuzz/run-short.sh     shorter
#   FUZZ_TARGETS="uart port_bus" ...     a subset
#
# An input that runs 20 s counts as a hang, a failure like a crash.
# Exits non-zero when a regression input or a fuzzer run fails; the failing
# input is printed (keep it under fuzz/regressions/<target>/ once fixed).
set -euo pipefail

FUZZ_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD_DIR="${1:-${FUZZ_DIR}/../build-fuzz}"
SECONDS_PER_TARGET="${FUZZ_SECONDS:-10}"
TARGETS="${FUZZ_TARGETS:-hypercall_dispatcher multicall descriptor elf_loader multiboot uart port_bus frame_walk symbolizer q35_devices}"

if [[ ! -f "${BUILD_DIR}/build.ninja" && ! -f "${BUILD_DIR}/Makefile" ]]; then
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "${FUZZ_DIR}" -B "${BUILD_DIR}" "${generator[@]}" >/dev/null
fi
cmake --build "${BUILD_DIR}" -j"$(nproc)"

SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/minivmm-fuzz.XXXXXX")"
trap 'rm -rf "${SCRATCH}"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# One target: replay, then fuzz. Its report goes to ${SCRATCH}/<target>/report
# (stdout) and report.err (stderr); it exits non-zero when it failed.
fuzz_one() {
  local target=$1
  local bin="${BUILD_DIR}/fuzz_${target}"
  mkdir -p "${SCRATCH}/${target}/corpus" "${SCRATCH}/${target}/artifacts"

  # 1. Every kept regression input must pass.
  shopt -s nullglob
  local regressions=("${FUZZ_DIR}/regressions/${target}"/*)
  shopt -u nullglob
  if ((${#regressions[@]} > 0)); then
    if ! "${bin}" -timeout=20 "${regressions[@]}" >"${SCRATCH}/${target}/replay.log" 2>&1; then
      echo "FAIL ${target}: a regression input fails again:" >&2
      tail -n 40 "${SCRATCH}/${target}/replay.log" >&2
      return 1
    fi
  fi

  # 2. Fuzz briefly from the seeds (new units land in the scratch corpus).
  if "${bin}" "${SCRATCH}/${target}/corpus" "${FUZZ_DIR}/corpus/${target}" \
      -max_total_time="${SECONDS_PER_TARGET}" -timeout=20 -print_final_stats=1 \
      -artifact_prefix="${SCRATCH}/${target}/artifacts/" \
      >"${SCRATCH}/${target}/fuzz.log" 2>&1; then
    local runs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "${SCRATCH}/${target}/fuzz.log")
    echo "ok   ${target}: ${runs:-?} executions, ${#regressions[@]} regression inputs replayed"
  else
    echo "FAIL ${target}: the fuzzer found a crash:" >&2
    tail -n 60 "${SCRATCH}/${target}/fuzz.log" >&2
    for a in "${SCRATCH}/${target}/artifacts"/*; do
      [[ -f "$a" ]] && echo "  input (base64): $(base64 -w0 "$a")" >&2
    done
    return 1
  fi
}

# The targets run $(nproc) at a time, each for its own FUZZ_SECONDS; their
# reports follow in the list's order.
jobs_at_once=$(nproc)
declare -A pid_of=()
for target in ${TARGETS}; do
  while (($(jobs -rp | wc -l) >= jobs_at_once)); do wait -n || true; done
  mkdir -p "${SCRATCH}/${target}"
  fuzz_one "${target}" >"${SCRATCH}/${target}/report" 2>"${SCRATCH}/${target}/report.err" &
  pid_of[${target}]=$!
done
failed=()
for target in ${TARGETS}; do
  status=0
  wait "${pid_of[${target}]}" || status=$?
  cat "${SCRATCH}/${target}/report"
  cat "${SCRATCH}/${target}/report.err" >&2
  ((status == 0)) || failed+=("${target}")
done

if ((${#failed[@]} > 0)); then
  echo "fuzz short run FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz short run passed"
