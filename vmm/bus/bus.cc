#include "vmm/bus/bus.h"

#include <algorithm>
#include <iterator>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "minivmm/exit_stats.h"

namespace minivmm {
namespace {

constexpr uint64_t kMaxAddress = std::numeric_limits<uint64_t>::max();

}  // namespace

absl::StatusOr<int> Bus::Register(uint64_t base, uint64_t length, IoDevice* device) {
  if (device == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: null device at 0x%x", name_, base));
  }
  if (length == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: device '%s' at 0x%x has length 0", name_, device->Name(), base));
  }
  if (length - 1 > kMaxAddress - base) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: device '%s' range 0x%x + 0x%x runs past the top of the address space",
                        name_, device->Name(), base, length));
  }
  const uint64_t last = base + (length - 1);

  // The first range starting after `base`; only it and its predecessor can
  // overlap [base, last], since registered ranges are sorted and disjoint.
  auto next = std::upper_bound(ranges_.begin(), ranges_.end(), base,
                               [](uint64_t addr, const Range& r) { return addr < r.base; });
  const Range* clash = nullptr;
  if (next != ranges_.end() && next->base <= last) clash = &*next;
  if (next != ranges_.begin() && std::prev(next)->last >= base) clash = &*std::prev(next);
  if (clash != nullptr) {
    return absl::AlreadyExistsError(absl::StrFormat(
        "%s: device '%s' range [0x%x, 0x%x] overlaps device '%s' range [0x%x, 0x%x]", name_,
        device->Name(), base, last, devices_[clash->index]->Name(), clash->base, clash->last));
  }
  if (device_count() >= kMaxBusDevices) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("%s: cannot register device '%s': the bus holds at most %d devices", name_,
                        device->Name(), kMaxBusDevices));
  }

  const int index = device_count();
  devices_.push_back(device);
  ranges_.insert(next, Range{base, last, index});
  return index;
}

std::optional<BusMatch> Bus::Find(uint64_t addr, uint64_t size) const {
  if (size == 0 || size - 1 > kMaxAddress - addr) return std::nullopt;
  const uint64_t last = addr + (size - 1);
  auto next = std::upper_bound(ranges_.begin(), ranges_.end(), addr,
                               [](uint64_t a, const Range& r) { return a < r.base; });
  if (next == ranges_.begin()) return std::nullopt;
  const Range& range = *std::prev(next);
  if (addr > range.last || last > range.last) return std::nullopt;
  return BusMatch{devices_[range.index], addr - range.base, range.index};
}

std::string_view Bus::DeviceName(int index) const {
  if (index < 0 || index >= device_count()) return {};
  return devices_[index]->Name();
}

}  // namespace minivmm
