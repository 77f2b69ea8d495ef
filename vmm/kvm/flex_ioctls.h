// Ioctls whose argument struct ends in a flexible array. Debian 12's
// linux-libc-dev declares those arrays with __DECLARE_FLEX_ARRAY, which in
// C++ adds a 1-byte empty member: sizeof() and the array's offset differ from
// the kernel's C layout (kvm_cpuid2 is 12 bytes instead of 8), so the
// header's ioctl numbers are wrong in C++. These use the kernel's sizes, and
// callers lay out the buffers by hand with the C offsets below.
#ifndef MINIVMM_VMM_KVM_FLEX_IOCTLS_H_
#define MINIVMM_VMM_KVM_FLEX_IOCTLS_H_

#include <linux/kvm.h>

namespace minivmm {

inline constexpr size_t kKvmCpuid2HeaderBytes = 8;      // nent, padding
inline constexpr size_t kKvmSignalMaskHeaderBytes = 4;  // len
inline constexpr size_t kKvmStatsDescHeaderBytes = 16;  // kvm_stats_desc before name[]
inline constexpr size_t kKvmMsrsHeaderBytes = 8;        // nmsrs, pad
inline constexpr size_t kKvmIrqRoutingHeaderBytes = 8;  // nr, flags
inline constexpr unsigned long kKvmSetGsiRouting =
    _IOC(_IOC_WRITE, KVMIO, 0x6a, kKvmIrqRoutingHeaderBytes);
inline constexpr unsigned long kKvmGetSupportedCpuid =
    _IOC(_IOC_READ | _IOC_WRITE, KVMIO, 0x05, kKvmCpuid2HeaderBytes);
inline constexpr unsigned long kKvmGetSupportedHvCpuid =
    _IOC(_IOC_READ | _IOC_WRITE, KVMIO, 0xc1, kKvmCpuid2HeaderBytes);
inline constexpr unsigned long kKvmSetCpuid2 = _IOC(_IOC_WRITE, KVMIO, 0x90, kKvmCpuid2HeaderBytes);
inline constexpr unsigned long kKvmSetMsrs = _IOC(_IOC_WRITE, KVMIO, 0x89, kKvmMsrsHeaderBytes);
inline constexpr unsigned long kKvmSetSignalMask =
    _IOC(_IOC_WRITE, KVMIO, 0x8b, kKvmSignalMaskHeaderBytes);

}  // namespace minivmm

#endif  // MINIVMM_VMM_KVM_FLEX_IOCTLS_H_
