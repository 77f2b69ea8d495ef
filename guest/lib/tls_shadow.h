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
  // must send exactly the slots in the mask. Before the first call, and
  // after Invalidate(), every slot counts as changed: the GDT content is
  // unknown (the VMM may store a descriptor differently than it was sent).
  unsigned Changed(const uint64_t next[kTlsSlots]) {
    unsigned mask = 0;
    for (int i = 0; i < kTlsSlots; ++i) {
      if (!valid_[i] || sent_[i] != next[i]) {
        mask |= 1u << i;
        sent_[i] = next[i];
        valid_[i] = true;
      }
    }
    return mask;
  }

  void Invalidate() {
    for (bool& v : valid_) v = false;
  }

 private:
  uint64_t sent_[kTlsSlots] = {};
  bool valid_[kTlsSlots] = {};
};

}  // namespace guest

#endif  // GUEST_LIB_TLS_SHADOW_H_
