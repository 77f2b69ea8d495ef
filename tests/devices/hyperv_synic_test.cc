// HypervSynic (devices/hyperv_synic.h) and HypervTestdev
// (devices/hyperv_testdev.h) over a fake SintRoutes and guest RAM of their
// own: QEMU's answers for every HvPostMessage and HvSignalEvent case, the
// message slot protocol, and the device's requests.
#include "devices/hyperv_synic.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "devices/hyperv_testdev.h"
#include "gtest/gtest.h"
#include "tests/common/fake_vm.h"

namespace minivmm {
namespace {

class FakeSintRoutes final : public SintRoutes {
 public:
  struct Route {
    uint32_t vp_index, sint;
    std::function<void()> on_ack;
    uint64_t raised = 0;
  };
  absl::StatusOr<uint32_t> Add(uint32_t vp_index, uint32_t sint,
                               std::function<void()> on_ack) override {
    if (full) return absl::ResourceExhaustedError("full");
    routes[next] = Route{vp_index, sint, std::move(on_ack)};
    return next++;
  }
  absl::Status Raise(uint32_t route) override {
    auto it = routes.find(route);
    if (it == routes.end()) return absl::NotFoundError("no route");
    ++it->second.raised;
    return absl::OkStatus();
  }
  absl::Status Remove(uint32_t route) override {
    return routes.erase(route) == 1 ? absl::OkStatus() : absl::NotFoundError("no route");
  }
  // The one route to (vp_index, sint), or null.
  Route* To(uint32_t vp_index, uint32_t sint) {
    for (auto& [n, r] : routes)
      if (r.vp_index == vp_index && r.sint == sint) return &r;
    return nullptr;
  }
  std::map<uint32_t, Route> routes;
  uint32_t next = 24;
  bool full = false;
};

constexpr uint64_t kSynicRam = 64 * 4096;
constexpr uint64_t kSynicMsgPage = 0x10000, kSynicEvtPage = 0x11000, kSynicInput = 0x12000;
constexpr uint64_t kSynicFast = 1u << 16;

class HypervSynicTest : public ::testing::Test {
 protected:
  HypervSynicTest() : ram_(kSynicRam, 0), memory_(ram_), synic_(memory_, routes_, 2) {}

  void EnableSynic(uint32_t cpu, bool msg = true, bool evt = true, bool control = true) {
    synic_.SynicControlWritten(cpu, {.msr = 0x40000080,
                                     .control = control ? 1u : 0u,
                                     .evt_page = (kSynicEvtPage + cpu * 0x2000) | (evt ? 1 : 0),
                                     .msg_page = (kSynicMsgPage + cpu * 0x2000) | (msg ? 1 : 0)});
  }
  // An hv_input_post_message at kSynicInput.
  void Input(uint32_t connection, uint32_t type, uint32_t size, uint64_t payload0) {
    uint8_t* in = &ram_[kSynicInput];
    std::memset(in, 0, 256);
    std::memcpy(in, &connection, 4);
    std::memcpy(in + 8, &type, 4);
    std::memcpy(in + 12, &size, 4);
    std::memcpy(in + 16, &payload0, 8);
  }
  uint16_t Post(uint64_t gpa = kSynicInput, uint64_t flags = 0) {
    return synic_.Hypercall(0, {.input = HypervSynic::kPostMessage | flags, .params = {gpa, 0}});
  }
  uint16_t Signal(uint64_t param, bool fast = true) {
    return synic_.Hypercall(
        0, {.input = HypervSynic::kSignalEvent | (fast ? kSynicFast : 0), .params = {param, 0}});
  }
  uint8_t* Slot(uint32_t cpu, uint32_t sint) {
    return &ram_[kSynicMsgPage + cpu * 0x2000 + sint * 256];
  }
  uint32_t SlotType(uint32_t cpu, uint32_t sint) {
    uint32_t v;
    std::memcpy(&v, Slot(cpu, sint), 4);
    return v;
  }
  uint64_t SlotPayload(uint32_t cpu, uint32_t sint) {
    uint64_t v;
    std::memcpy(&v, Slot(cpu, sint) + 16, 8);
    return v;
  }
  bool Pending(uint32_t cpu, uint32_t sint) { return (Slot(cpu, sint)[5] & 1) != 0; }
  uint32_t Flags(uint32_t cpu, uint32_t sint, uint32_t word) {
    uint32_t v;
    std::memcpy(&v, &ram_[kSynicEvtPage + cpu * 0x2000 + sint * 256 + word * 4], 4);
    return v;
  }

  std::vector<uint8_t> ram_;
  GuestMemory memory_;
  FakeSintRoutes routes_;
  HypervSynic synic_;
};

TEST_F(HypervSynicTest, AMessageIntoAFreeSlotIsCopiedAndRaisesTheSint) {
  EnableSynic(1);
  ASSERT_TRUE(synic_.CreateMessageConnection(0x10, 1, 8).ok());
  Input(0x10, 0x12345678, 8, 0x1122334455667788);
  EXPECT_EQ(Post(), kHvStatusSuccess);
  EXPECT_EQ(SlotType(1, 8), 0x12345678u);
  EXPECT_EQ(Slot(1, 8)[4], 8);
  EXPECT_FALSE(Pending(1, 8));
  EXPECT_EQ(SlotPayload(1, 8), 0x1122334455667788u);
  EXPECT_EQ(routes_.To(1, 8)->raised, 1u);
  EXPECT_EQ(SlotType(0, 8), 0u);  // not another vCPU's slot
}

TEST_F(HypervSynicTest, ABusySlotStagesTheMessageUntilTheGuestAcknowledgesWithTheSlotFree) {
  EnableSynic(0);
  ASSERT_TRUE(synic_.CreateMessageConnection(0x10, 0, 8).ok());
  Input(0x10, 7, 8, 1);
  ASSERT_EQ(Post(), kHvStatusSuccess);
  FakeSintRoutes::Route* route = routes_.To(0, 8);
  Input(0x10, 7, 8, 2);
  EXPECT_EQ(Post(), kHvStatusSuccess);  // staged
  EXPECT_TRUE(Pending(0, 8));
  EXPECT_EQ(SlotPayload(0, 8), 1u);
  EXPECT_EQ(route->raised, 1u);
  Input(0x10, 7, 8, 3);
  EXPECT_EQ(Post(), kHvStatusInsufficientBuffers);
  // An acknowledgement with the slot still busy: still staged, still pending.
  Slot(0, 8)[5] = 0;
  route->on_ack();
  EXPECT_TRUE(Pending(0, 8));
  EXPECT_EQ(route->raised, 1u);
  // The guest frees the slot and acknowledges: the latest message arrives.
  std::memset(Slot(0, 8), 0, 4);
  route->on_ack();
  EXPECT_EQ(SlotType(0, 8), 7u);
  EXPECT_EQ(SlotPayload(0, 8), 3u);
  EXPECT_FALSE(Pending(0, 8));
  EXPECT_EQ(route->raised, 2u);
  route->on_ack();  // nothing staged any more
  EXPECT_EQ(route->raised, 2u);
}

TEST_F(HypervSynicTest, PostMessageAnswersAsQemu) {
  EnableSynic(0);
  ASSERT_TRUE(synic_.CreateMessageConnection(0x10, 0, 8).ok());
  Input(0x10, 7, 8, 1);
  EXPECT_EQ(Post(kSynicInput, kSynicFast), kHvStatusInvalidHypercallCode);
  EXPECT_EQ(Post(kSynicInput + 4), kHvStatusInvalidAlignment);
  EXPECT_EQ(Post(kSynicRam - 128), kHvStatusInsufficientMemory);
  EXPECT_EQ(Post(~uint64_t{7}), kHvStatusInsufficientMemory);
  Input(0x10, 7, 241, 1);
  EXPECT_EQ(Post(), kHvStatusInvalidHypercallInput);
  Input(0x11, 7, 8, 1);
  EXPECT_EQ(Post(), kHvStatusInvalidConnectionId);
  Input(0xff000010, 7, 240, 1);  // bits above the id's 24 are not looked at
  EXPECT_EQ(Post(), kHvStatusSuccess);
  EXPECT_EQ(Slot(0, 8)[4], 240);
  EXPECT_EQ(routes_.To(0, 8)->raised, 1u);
}

TEST_F(HypervSynicTest, AMessageForAVcpuWithoutAMessagePageIsDropped) {
  EnableSynic(0, /*msg=*/false);
  ASSERT_TRUE(synic_.CreateMessageConnection(0x10, 0, 8).ok());
  Input(0x10, 7, 8, 1);
  EXPECT_EQ(Post(), kHvStatusSuccess);
  EXPECT_EQ(synic_.dropped_messages(), 1u);
  EXPECT_EQ(routes_.To(0, 8)->raised, 0u);
  // A page beyond RAM is no page either.
  synic_.SynicControlWritten(0, {.control = 1, .msg_page = (kSynicRam + 0x1000) | 1});
  EXPECT_EQ(Post(), kHvStatusSuccess);
  EXPECT_EQ(synic_.dropped_messages(), 2u);
}

TEST_F(HypervSynicTest, AnEventSetsItsFlagAndRaisesTheSintOnlyWhenTheFlagWasClear) {
  EnableSynic(1);
  ASSERT_TRUE(synic_.CreateEventConnection(0x25, 1, 9).ok());
  EXPECT_EQ(Signal(0x25), kHvStatusSuccess);
  EXPECT_EQ(Flags(1, 9, 1), 1u << 5);
  EXPECT_EQ(routes_.To(1, 9)->raised, 1u);
  EXPECT_EQ(Signal(0x25), kHvStatusSuccess);
  EXPECT_EQ(routes_.To(1, 9)->raised, 1u);
  std::memset(&ram_[kSynicEvtPage + 0x2000 + 9 * 256], 0, 8);
  std::memcpy(&ram_[kSynicInput], "\x25\0\0\0\0\0\0\0", 8);
  EXPECT_EQ(Signal(kSynicInput, /*fast=*/false), kHvStatusSuccess);
  EXPECT_EQ(routes_.To(1, 9)->raised, 2u);
  EXPECT_EQ(Flags(0, 9, 1), 0u);
}

TEST_F(HypervSynicTest, SignalEventAnswersAsQemu) {
  EnableSynic(0);
  ASSERT_TRUE(synic_.CreateEventConnection(0x20, 0, 9).ok());
  EXPECT_EQ(Signal(0x1234), kHvStatusInvalidConnectionId);
  EXPECT_EQ(Signal(0x20 | (uint64_t{1} << 32)), kHvStatusInvalidPortId);  // a flag number
  EXPECT_EQ(Signal(0x20 | (uint64_t{1} << 24)), kHvStatusInvalidHypercallInput);
  EXPECT_EQ(Signal(0x20 | (uint64_t{1} << 48)), kHvStatusInvalidHypercallInput);
  EXPECT_EQ(Signal(kSynicInput + 4, /*fast=*/false), kHvStatusInvalidAlignment);
  EXPECT_EQ(Signal(kSynicRam, /*fast=*/false), kHvStatusInsufficientMemory);
  EXPECT_EQ(routes_.To(0, 9)->raised, 0u);
  EXPECT_EQ(synic_.Hypercall(0, {.input = 0x5e}), kHvStatusInvalidHypercallCode);
}

TEST_F(HypervSynicTest, AnEventForAVcpuWithoutItsFlagsPageOrSynicIsDropped) {
  EnableSynic(0, true, /*evt=*/false);
  ASSERT_TRUE(synic_.CreateEventConnection(0x20, 0, 9).ok());
  EXPECT_EQ(Signal(0x20), kHvStatusSuccess);
  EnableSynic(0, true, true, /*control=*/false);
  EXPECT_EQ(Signal(0x20), kHvStatusSuccess);
  EXPECT_EQ(synic_.dropped_events(), 2u);
  EXPECT_EQ(routes_.To(0, 9)->raised, 0u);
  EXPECT_EQ(Flags(0, 9, 1), 0u);
}

TEST_F(HypervSynicTest, ConnectionsAreCheckedAndAnOldAcknowledgementReachesNoNewConnection) {
  EXPECT_EQ(synic_.CreateMessageConnection(1, 2, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(synic_.CreateMessageConnection(1, 0, 16).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(synic_.CreateMessageConnection(1u << 24, 0, 0).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(synic_.CreateEventConnection(2048, 0, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(synic_.DestroyMessageConnection(1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(synic_.DestroyEventConnection(1).code(), absl::StatusCode::kNotFound);
  routes_.full = true;
  EXPECT_EQ(synic_.CreateEventConnection(1, 0, 0).code(), absl::StatusCode::kResourceExhausted);
  routes_.full = false;
  EXPECT_TRUE(routes_.routes.empty());

  EnableSynic(0);
  ASSERT_TRUE(synic_.CreateMessageConnection(0x10, 0, 8).ok());
  EXPECT_EQ(synic_.CreateMessageConnection(0x10, 0, 8).code(), absl::StatusCode::kAlreadyExists);
  Input(0x10, 7, 8, 1);
  ASSERT_EQ(Post(), kHvStatusSuccess);
  ASSERT_EQ(Post(), kHvStatusSuccess);  // staged
  std::function<void()> old_ack = routes_.To(0, 8)->on_ack;
  ASSERT_TRUE(synic_.DestroyMessageConnection(0x10).ok());
  EXPECT_TRUE(routes_.routes.empty());
  ASSERT_TRUE(synic_.CreateMessageConnection(0x10, 0, 8).ok());
  std::memset(Slot(0, 8), 0, 256);
  old_ack();  // the old connection's: the new one has nothing staged anyway
  EXPECT_EQ(SlotType(0, 8), 0u);
  Input(0x10, 9, 8, 2);
  ASSERT_EQ(Post(), kHvStatusSuccess);
  std::memset(Slot(0, 8), 0, 4);
  Input(0x10, 9, 8, 3);
  ASSERT_EQ(Post(), kHvStatusSuccess);  // into the slot freed
  EXPECT_EQ(SlotPayload(0, 8), 3u);
}

class FakeEventConnections final : public HypervEventConnections {
 public:
  absl::Status Connect(uint32_t id, std::function<void()> on_signal) override {
    if (refuse) return absl::FailedPreconditionError("refused");
    connections[id] = std::move(on_signal);
    return absl::OkStatus();
  }
  absl::Status Disconnect(uint32_t id) override {
    return connections.erase(id) == 1 ? absl::OkStatus() : absl::NotFoundError("none");
  }
  std::map<uint32_t, std::function<void()>> connections;
  bool refuse = false;
};

// With KVM serving HvSignalEvent (KVM_HYPERV_EVENTFD): each event connection
// is given to it, and its signal sets the flag as the hypercall would.
TEST(HypervSynicInKernelTest, AnEventKvmServedSetsTheFlagAndRaisesTheSintOnce) {
  std::vector<uint8_t> ram(kSynicRam, 0);
  GuestMemory memory(ram);
  FakeSintRoutes routes;
  FakeEventConnections in_kernel;
  HypervSynic synic(memory, routes, 1, &in_kernel);
  synic.SynicControlWritten(0, {.control = 1, .evt_page = kSynicEvtPage | 1});
  ASSERT_TRUE(synic.CreateEventConnection(0x20, 0, 9).ok());
  ASSERT_EQ(in_kernel.connections.count(0x20), 1u);
  std::function<void()> signal = in_kernel.connections[0x20];
  signal();
  uint32_t word;
  std::memcpy(&word, &ram[kSynicEvtPage + 9 * 256 + 4], 4);
  EXPECT_EQ(word, 1u);  // flag 0x20: word 1, bit 0
  EXPECT_EQ(routes.To(0, 9)->raised, 1u);
  signal();
  EXPECT_EQ(routes.To(0, 9)->raised, 1u);
  // Gone, and made again: the old connection's signal reaches nothing.
  ASSERT_TRUE(synic.DestroyEventConnection(0x20).ok());
  EXPECT_TRUE(in_kernel.connections.empty());
  ASSERT_TRUE(synic.CreateEventConnection(0x20, 0, 9).ok());
  std::memset(&ram[kSynicEvtPage + 9 * 256], 0, 8);
  signal();
  std::memcpy(&word, &ram[kSynicEvtPage + 9 * 256 + 4], 4);
  EXPECT_EQ(word, 0u);
  // KVM refusing the connection leaves no route behind.
  in_kernel.refuse = true;
  EXPECT_EQ(synic.CreateEventConnection(0x21, 0, 9).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(routes.routes.size(), 1u);
}

class HypervTestdevTest : public HypervSynicTest {
 protected:
  void Request(uint8_t ctl, uint8_t vp, uint8_t sint, uint8_t conn = 0) {
    const uint32_t value = uint32_t{conn} << 24 | uint32_t{ctl} << 16 | uint32_t{vp} << 8 | sint;
    uint8_t bytes[4];
    std::memcpy(bytes, &value, 4);
    dev_.Write(0, bytes, vm_.exit);
  }
  testing::FakeVm vm_;
  HypervTestdev dev_{&synic_, &routes_};
};

TEST_F(HypervTestdevTest, RoutesAreCreatedRaisedAndDestroyed) {
  EXPECT_EQ(dev_.Name(), "hyperv-testdev");
  Request(HypervTestdev::kSintRouteCreate, 1, 3);
  ASSERT_NE(routes_.To(1, 3), nullptr);
  Request(HypervTestdev::kSintRouteSetSint, 1, 3);
  Request(HypervTestdev::kSintRouteSetSint, 1, 3);
  EXPECT_EQ(routes_.To(1, 3)->raised, 2u);
  Request(HypervTestdev::kSintRouteDestroy, 1, 3);
  EXPECT_EQ(routes_.To(1, 3), nullptr);
  EXPECT_EQ(dev_.refused(), 0u);
  uint8_t read[4] = {1, 2, 3, 4};
  dev_.Read(0, read, vm_.exit);
  EXPECT_EQ(std::vector<uint8_t>(read, read + 4), std::vector<uint8_t>(4, 0));
}

TEST_F(HypervTestdevTest, RequestsQemuWouldAbortOnAreRefusedAndCounted) {
  Request(HypervTestdev::kSintRouteSetSint, 0, 1);  // no such route
  EXPECT_EQ(dev_.first_refusal(), "request 0x00030001: no route to SINT 1 of VP 0");
  Request(HypervTestdev::kSintRouteCreate, 0, 1);
  Request(HypervTestdev::kSintRouteCreate, 0, 1);  // exists
  Request(HypervTestdev::kSintRouteCreate, 2, 1);  // no VP 2
  Request(HypervTestdev::kSintRouteCreate, 0, 16);
  Request(HypervTestdev::kSintRouteDestroy, 1, 1);
  Request(HypervTestdev::kMsgConnDestroy, 0, 0, 0x10);
  Request(HypervTestdev::kEvtConnDestroy, 0, 0, 0x20);
  EXPECT_EQ(dev_.refused(), 7u);
  EXPECT_EQ(routes_.routes.size(), 1u);
  Request(8, 0, 1);  // QEMU ignores another control
  EXPECT_EQ(dev_.refused(), 7u);
  uint8_t two[2] = {1, 0};
  dev_.Write(0, two, vm_.exit);
  dev_.Write(1, std::span<const uint8_t>(two, 1), vm_.exit);
  EXPECT_EQ(dev_.ignored_writes(), 2u);
  EXPECT_EQ(routes_.routes.size(), 1u);
}

TEST_F(HypervTestdevTest, ConnectionsAreTheSynicsOwn) {
  EnableSynic(1);
  Request(HypervTestdev::kMsgConnCreate, 1, 8, 0x10);
  Request(HypervTestdev::kEvtConnCreate, 1, 9, 0x20);
  ASSERT_EQ(dev_.refused(), 0u) << dev_.first_refusal();
  Input(0x10, 7, 8, 1);
  EXPECT_EQ(Post(), kHvStatusSuccess);
  EXPECT_EQ(routes_.To(1, 8)->raised, 1u);
  EXPECT_EQ(Signal(0x20), kHvStatusSuccess);
  EXPECT_EQ(routes_.To(1, 9)->raised, 1u);
  Request(HypervTestdev::kMsgConnDestroy, 0, 0, 0x10);
  Request(HypervTestdev::kEvtConnDestroy, 0, 0, 0x20);
  EXPECT_TRUE(routes_.routes.empty());
  EXPECT_EQ(Post(), kHvStatusInvalidConnectionId);
  EXPECT_EQ(Signal(0x20), kHvStatusInvalidConnectionId);
}

}  // namespace
}  // namespace minivmm
