// The CLI's exit statuses (README.md "Exit status"). A guest shutdown exits
// with the guest's own code (0-255); the rest are the VMM's.
#ifndef MINIVMM_CLI_EXIT_CODES_H_
#define MINIVMM_CLI_EXIT_CODES_H_

namespace minivmm::cli {

inline constexpr int kExitUsage = 2;               // bad flags or arguments
inline constexpr int kExitHaltedForever = 122;     // HLT/block that nothing can wake
inline constexpr int kExitTripleFault = 123;       // KVM_EXIT_SHUTDOWN
inline constexpr int kExitTimeout = 124;           // --timeout elapsed (as timeout(1))
inline constexpr int kExitVmmError = 125;          // no /dev/kvm, bad ELF, ioctl failure, ...
inline constexpr int kExitEmulationFailure = 126;  // KVM_EXIT_INTERNAL_ERROR
inline constexpr int kExitSigint = 130;
inline constexpr int kExitSigterm = 143;

// minivmm compare, as diff(1) (docs/run-record.md "Commands that read
// records"): 0 the same or better.
inline constexpr int kCompareRegression = 1;  // with --fail-on-regression: a count grew
// Unreadable file, not a record, a run against a bench, records of different
// vCPU counts, nothing in common.
inline constexpr int kCompareTrouble = 2;

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_EXIT_CODES_H_
