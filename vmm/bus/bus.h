// An address-range bus for port I/O or MMIO: the VM builder registers each
// device on a range, and the run loop looks up the device that owns a guest
// access. Modelled on Firecracker's vm-device bus and L4Re's range-keyed port
// lookup: overlapping registrations are refused, and an access that is not
// wholly inside one device (partial coverage) matches nothing.
#ifndef MINIVMM_VMM_BUS_BUS_H_
#define MINIVMM_VMM_BUS_BUS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "minivmm/io_device.h"

namespace minivmm {

// A device that owns an access, with the access's offset from the device's
// base and the device's stable index (see Bus::Register).
struct BusMatch {
  IoDevice* device;
  uint64_t offset;
  int index;
};

// Not thread-safe for Register; Find and the accessors are const and may be
// called from any number of vCPU threads once registration is over.
class Bus {
 public:
  // `name` ("pio", "mmio") only prefixes error messages.
  explicit Bus(std::string_view name = "bus") : name_(name) {}

  Bus(const Bus&) = delete;
  Bus& operator=(const Bus&) = delete;

  // Claims [base, base + length) for `device`, which is not owned and must
  // outlive the bus. Returns the device's index: 0 for the first successful
  // registration, then 1, 2, ... in order; it never changes and is the slot in
  // ExitStats::pio_by_device / mmio_by_device. A range may end at the very
  // top of the 64-bit space (base + length == 2^64).
  // Errors: InvalidArgument for a null device, a length of 0 or a range that
  // runs past 2^64; AlreadyExists (naming both devices) when the range
  // overlaps a registered one (adjacent ranges are fine); ResourceExhausted
  // past kMaxBusDevices registrations. A refused call changes nothing.
  absl::StatusOr<int> Register(uint64_t base, uint64_t length, IoDevice* device);

  // The device owning the whole access [addr, addr + size), or nullopt when
  // no single device covers all of it (nothing there, a straddle across two
  // devices or past a device's end, size 0, or a wrapping range). No
  // allocation; O(log n).
  std::optional<BusMatch> Find(uint64_t addr, uint64_t size) const;

  // The name of the device with this index, or "" for an index that was
  // never returned by Register.
  std::string_view DeviceName(int index) const;

  int device_count() const { return static_cast<int>(devices_.size()); }

 private:
  struct Range {
    uint64_t base;
    uint64_t last;  // inclusive, so that a range may end at 2^64
    int index;
  };

  std::string name_;
  std::vector<Range> ranges_;       // sorted by base, never overlapping
  std::vector<IoDevice*> devices_;  // by index
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_BUS_BUS_H_
