#!/usr/bin/env bash
# One command from a fresh Debian 12 machine with /dev/kvm:
#   scripts/quickstart.sh          install what is missing, build, run the default guest
#   scripts/quickstart.sh test     install what is missing, build, run every test
#                                  (debug build, then again under ASan + UBSan)
# Extra arguments after `run` go to `minivmm run`.
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-run}"
[ $# -gt 0 ] && shift

packages=(
  cmake ninja-build g++ pkg-config
  linux-libc-dev libabsl-dev libfmt-dev libcli11-dev nlohmann-json3-dev libssl-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-matplotlib valgrind clang-14 qemu-system-x86
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "quickstart: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -e /dev/kvm ]; then
  echo "quickstart: /dev/kvm is missing; the build and the unit tests work, guests cannot run" >&2
fi

preset=debug
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"

case "$mode" in
  run)
    exec "build/$preset/minivmm" run "$@"
    ;;
  test)
    ctest --preset "$preset" -j "$(nproc)" "$@"
    # The same suite again with AddressSanitizer and UBSan (the guest and the
    # fuzzers keep their own flags).
    cmake --preset asan >/dev/null
    cmake --build --preset asan
    ctest --preset asan -j "$(nproc)" "$@"
    ;;
  *)
    echo "usage: scripts/quickstart.sh [run [minivmm run flags...] | test [ctest flags...]]" >&2
    exit 2
    ;;
esac
