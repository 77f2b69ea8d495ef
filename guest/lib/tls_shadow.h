// Per-CPU shadow copies of the TLS descriptors last sent to the VMM
// (the Xen "TLS shadow" optimization). Pure.
#ifndef GUEST_LIB_TLS_SHADOW_H_
#define GUEST_LIB_TLS_SHADOW_H_

#include <stdint.h>

namespace guest {

inline constexpr int kTlsSlots = 3;

class TlsShadow {
 public:
  // Returns a bitmask (bit i = slot i) of the descriptors in `next` that
  // differ from what was last sent, and records them as sent. The caller
  // must send exactly the slots in the mask. A shadow starts as the boot
  // GDT: every TLS slot empty, which the VMM stores as the all-zero
  // descriptor it would be sent (the VMM may store other descriptors
  // differently than they were sent, hence a copy of what was sent, not of
  // the GDT).
  unsigned Changed(const uint64_t next[kTlsSlots]) {
    unsigned mask = 0;
    for (int i = 0; i < kTlsSlots; ++i) {
      if (sent_[i] != next[i]) {
        mask |= 1u << i;
        sent_[i] = next[i];
      }
    }
    return mask;
  }

 private:
  uint64_t sent_[kTlsSlots] = {};
};

}  // namespace guest

#endif  // GUEST_LIB_TLS_SHADOW_H_
