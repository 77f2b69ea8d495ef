// Vm::Create refuses bad configurations with a precise status and never
// leaves a half-built VM behind.
#include "gtest/gtest.h"
#include "tests/integration/vm_test_util.h"

namespace minivmm::testing {
namespace {

VmConfig Good() {
  VmConfig config;
  config.kernel_path = TinyGuest("null_hypercalls");
  return config;
}

TEST(VmCreateTest, MissingKvmDeviceIsNotFound) {
  VmConfig config = Good();
  config.kvm_device = "/nonexistent/kvm";
  auto vm = Vm::Create(config);
  EXPECT_EQ(vm.status().code(), absl::StatusCode::kNotFound) << vm.status();
}

TEST(VmCreateTest, UnreadableKvmDeviceIsPermissionDeniedOrNotAKvm) {
  VmConfig config = Good();
  config.kvm_device = "/dev/null";  // opens, but is not KVM
  auto vm = Vm::Create(config);
  EXPECT_FALSE(vm.ok());
  EXPECT_NE(vm.status().message().find("KVM_GET_API_VERSION"), absl::string_view::npos)
      << vm.status();
}

TEST(VmCreateTest, MemoryBelowMinimumIsInvalidArgument) {
  VmConfig config = Good();
  config.memory_bytes = 4ull << 20;
  EXPECT_EQ(Vm::Create(config).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(VmCreateTest, TimerRateAboveLimitIsInvalidArgument) {
  VmConfig config = Good();
  config.timer_hz = 100000;
  EXPECT_EQ(Vm::Create(config).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(VmCreateTest, OverlongCommandLineIsInvalidArgument) {
  VmConfig config = Good();
  config.cmdline = std::string(5000, 'x');
  EXPECT_EQ(Vm::Create(config).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(VmCreateTest, RunTwiceIsFailedPrecondition) {
  REQUIRE_KVM();
  auto vm = Vm::Create(Good());
  ASSERT_TRUE(vm.ok()) << vm.status();
  ASSERT_TRUE((*vm)->Run().ok());
  EXPECT_EQ((*vm)->Run().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(VmCreateTest, ExtraPioDeviceMayNotOverlapTheUart) {
  REQUIRE_KVM();
  auto vm = Vm::Create(Good());
  ASSERT_TRUE(vm.ok()) << vm.status();
  RecordingConsole unused;
  class Null final : public IoDevice {
   public:
    std::string_view Name() const override { return "null"; }
    void Read(uint64_t, std::span<uint8_t>, ExitContext&) override {}
    void Write(uint64_t, std::span<const uint8_t>, ExitContext&) override {}
  } device;
  EXPECT_EQ((*vm)->RegisterPioDevice(0x3F8, 1, &device).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE((*vm)->RegisterPioDevice(0x500, 4, &device).ok());
  EXPECT_EQ((*vm)->RegisterMmioDevice(0x1000, 4, &device).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace minivmm::testing
