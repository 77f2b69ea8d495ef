// Fuzzes Bus::Register / Find / DeviceName sequences against a naive model
// (a list of ranges scanned linearly): every registration must get the same
// verdict (index or error code) and every lookup the same device and offset.
// Values cluster at the interesting places: 0, the top of the 64-bit space,
// and the edges of ranges already registered.
//
// Input: repeated u8 op: op % 4 == 0 registers (base, length, device choice),
// anything else looks up (addr, size); then the operand encodings of Value().
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/input.h"
#include "vmm/bus/bus.h"

namespace minivmm::fuzz {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

class NamedDevice final : public IoDevice {
 public:
  std::string name;
  std::string_view Name() const override { return name; }
  void Read(uint64_t, std::span<uint8_t>, ExitContext&) override {}
  void Write(uint64_t, std::span<const uint8_t>, ExitContext&) override {}
};

struct ModelRange {
  uint64_t base, last;
  int index;
  IoDevice* device;
};

struct Model {
  std::vector<ModelRange> ranges;
  int count = 0;

  absl::StatusCode Register(uint64_t base, uint64_t len, IoDevice* device, int& index) {
    if (device == nullptr || len == 0) return absl::StatusCode::kInvalidArgument;
    if (len - 1 > kMax - base) return absl::StatusCode::kInvalidArgument;
    const uint64_t last = base + (len - 1);
    for (const ModelRange& r : ranges) {
      if (base <= r.last && r.base <= last) return absl::StatusCode::kAlreadyExists;
    }
    if (count >= kMaxBusDevices) return absl::StatusCode::kResourceExhausted;
    index = count++;
    ranges.push_back({base, last, index, device});
    return absl::StatusCode::kOk;
  }

  std::optional<ModelRange> Find(uint64_t addr, uint64_t size) const {
    if (size == 0 || size - 1 > kMax - addr) return std::nullopt;
    const uint64_t last = addr + (size - 1);
    for (const ModelRange& r : ranges) {
      if (addr >= r.base && last <= r.last) return r;
    }
    return std::nullopt;
  }
};

uint64_t Value(Input& in, const Model& model) {
  const uint8_t tag = in.U8();
  const ModelRange* r =
      model.ranges.empty() ? nullptr : &model.ranges[in.U8() % model.ranges.size()];
  switch (tag % 10) {
    case 0:
      return in.U64();
    case 1:
      return in.U8();
    case 2:
      return in.U16();
    case 3:
      return kMax - in.U8();
    case 4:
      return r ? r->base - in.U8() % 3 : 0;
    case 5:
      return r ? r->last + in.U8() % 3 : 0;  // may wrap to 0 at the top
    case 6:
      return r ? r->base + in.U8() : 1;
    case 7:
      return uint64_t{1} << (in.U8() % 64);
    case 8:
      return 0;
    default:
      return kMax;
  }
}

}  // namespace
}  // namespace minivmm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minivmm;
  using namespace minivmm::fuzz;
  static NamedDevice* devices = [] {
    auto* d = new NamedDevice[kMaxBusDevices + 8];
    for (int i = 0; i < kMaxBusDevices + 8; ++i) d[i].name = "dev" + std::to_string(i);
    return d;
  }();
  Input in(data, size);
  Bus bus("fuzz");
  Model model;
  int next_device = 0;
  int ops = 0;
  while (!in.empty() && ops++ < 256) {
    const uint8_t op = in.U8();
    if (op % 4 == 0) {
      const uint64_t base = Value(in, model);
      const uint64_t len = Value(in, model);
      IoDevice* device = in.U8() % 16 == 0 || next_device >= kMaxBusDevices + 8
                             ? nullptr
                             : &devices[next_device++];
      int want_index = -1;
      const absl::StatusCode want = model.Register(base, len, device, want_index);
      const absl::StatusOr<int> got = bus.Register(base, len, device);
      FUZZ_CHECK(got.status().code() == want);
      if (got.ok()) FUZZ_CHECK(*got == want_index);
      FUZZ_CHECK(bus.device_count() == model.count);
    } else {
      const uint64_t addr = Value(in, model);
      const uint64_t len = op % 4 == 1 ? in.U8() % 9 : Value(in, model);
      const std::optional<BusMatch> got = bus.Find(addr, len);
      const std::optional<ModelRange> want = model.Find(addr, len);
      FUZZ_CHECK(got.has_value() == want.has_value());
      if (got) {
        FUZZ_CHECK(got->device == want->device);
        FUZZ_CHECK(got->index == want->index);
        FUZZ_CHECK(got->offset == addr - want->base);
        FUZZ_CHECK(bus.DeviceName(got->index) == want->device->Name());
      }
      const int probe = static_cast<int>(static_cast<int8_t>(op));
      FUZZ_CHECK(bus.DeviceName(probe).empty() == (probe < 0 || probe >= model.count));
    }
  }
  return 0;
}
