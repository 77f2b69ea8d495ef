// The seam between pc-testdev's flush-page port and the machine's RAM, as
// devices/irq_lines.h is for interrupt lines: the device says "flush guest
// page `gpa`"; the machine, which owns the host mapping of RAM that devices
// never see, makes the host drop its page-table entries for that page (its
// contents unchanged), and with them, through the MMU notifier, KVM's own
// mapping of it (NPT/EPT or shadow), as QEMU's mprotect does.
#ifndef MINIVMM_DEVICES_HOST_PAGES_H_
#define MINIVMM_DEVICES_HOST_PAGES_H_

#include <cstdint>

namespace minivmm {

class HostPages {
 public:
  virtual ~HostPages() = default;

  // The 4 KiB page at guest-physical `gpa` (page-aligned by the caller).
  // A page that is not RAM is the machine's to ignore and count. Called
  // from the exiting vCPU's thread.
  virtual void FlushHostPage(uint64_t gpa) = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_HOST_PAGES_H_
