// The one recording fake of each interrupt seam for the device tests: an
// IrqLines (devices/irq_lines.h) that records every SetLevel call and an
// MsiSink (devices/msi.h) that records every message with its source ID, in
// order. No gtest: checks belong to the caller.
#ifndef MINIVMM_TESTS_COMMON_RECORDING_INTERRUPTS_H_
#define MINIVMM_TESTS_COMMON_RECORDING_INTERRUPTS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "devices/irq_lines.h"
#include "devices/msi.h"

namespace minivmm::testing {

// Records every level a device drives, repeats included, as (irq, high).
class RecordingIrqLines final : public IrqLines {
 public:
  void SetLevel(uint32_t irq, bool high) override { calls.emplace_back(irq, high); }
  std::vector<std::pair<uint32_t, bool>> calls;
};

// Records every MSI a device sends, with the source ID it was sent from.
class RecordingMsiSink final : public MsiSink {
 public:
  struct Sent {
    MsiMessage msi;
    SourceId source;
    bool operator==(const Sent&) const = default;
  };
  void SendMsi(const MsiMessage& msi, SourceId source) override { sent.push_back({msi, source}); }
  std::vector<Sent> sent;
};

}  // namespace minivmm::testing

#endif  // MINIVMM_TESTS_COMMON_RECORDING_INTERRUPTS_H_
