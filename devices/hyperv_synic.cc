#include "devices/hyperv_synic.h"

#include <atomic>
#include <cstring>
#include <span>
#include <utility>

#include "absl/strings/str_format.h"

namespace minivmm {
namespace {

constexpr uint64_t kEnable = 1;  // SIMP's, SIEFP's and SCONTROL's bit 0
constexpr uint64_t kPageMask = ~uint64_t{0xfff};
constexpr uint64_t kFastBit = uint64_t{1} << 16;
constexpr uint32_t kMsgPending = 1u << 8;  // message_flags (byte 5) bit 0, in the word at 4
constexpr uint32_t kEventFlags = 2048;     // bits in a SINT's event flags slot
constexpr uint64_t kFlagNumberBits = 0xffff00000000ull;

// hv_input_post_message's fields, and a message slot's.
constexpr size_t kInputConnectionId = 0, kInputType = 8, kInputSize = 12, kInputPayload = 16;
constexpr size_t kSlotType = 0, kSlotSizeFlags = 4, kSlotPayload = 16;

uint32_t Load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

std::atomic_ref<uint32_t> Word(uint8_t* p) {
  return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(p));
}

}  // namespace

HypervSynic::HypervSynic(const GuestMemory& memory, SintRoutes& routes, uint32_t cpus,
                         HypervEventConnections* in_kernel)
    : memory_(memory), routes_(routes), in_kernel_(in_kernel), pages_(cpus) {}

void HypervSynic::SynicControlWritten(uint32_t cpu, const SynicControl& control) {
  std::lock_guard lock(mu_);
  if (cpu >= pages_.size()) return;
  Pages& p = pages_[cpu];
  p.synic_enabled = (control.control & kEnable) != 0;
  p.msg_page = (control.msg_page & kEnable) != 0 ? control.msg_page & kPageMask : 0;
  p.evt_page = (control.evt_page & kEnable) != 0 ? control.evt_page & kPageMask : 0;
}

uint16_t HypervSynic::Hypercall(uint32_t /*cpu*/, const HypervHypercall& call) {
  switch (static_cast<uint16_t>(call.input)) {
    case kPostMessage:
      return PostMessage(call);
    case kSignalEvent:
      return SignalEvent(call);
    default:
      return kHvStatusInvalidHypercallCode;
  }
}

absl::Status HypervSynic::CheckTarget(uint32_t id, uint32_t vp_index, uint32_t sint) const {
  if (vp_index >= pages_.size())
    return absl::InvalidArgumentError(
        absl::StrFormat("VP index %u: the VM has %u vCPUs", vp_index, pages_.size()));
  if (sint >= kSints)
    return absl::InvalidArgumentError(absl::StrFormat("SINT %u: there are %u", sint, kSints));
  if ((id & ~kConnectionIdMask) != 0)
    return absl::InvalidArgumentError(
        absl::StrFormat("connection id 0x%x is wider than 24 bits", id));
  return absl::OkStatus();
}

absl::Status HypervSynic::CreateMessageConnection(uint32_t id, uint32_t vp_index, uint32_t sint) {
  std::lock_guard lock(mu_);
  if (absl::Status s = CheckTarget(id, vp_index, sint); !s.ok()) return s;
  if (messages_.contains(id))
    return absl::AlreadyExistsError(absl::StrFormat("message connection 0x%x exists", id));
  const uint64_t generation = ++generations_;
  absl::StatusOr<uint32_t> route =
      routes_.Add(vp_index, sint, [this, id, generation] { Acknowledged(id, generation); });
  if (!route.ok()) return route.status();
  messages_.emplace(
      id, MessageConnection{
              .vp_index = vp_index, .sint = sint, .route = *route, .generation = generation});
  return absl::OkStatus();
}

absl::Status HypervSynic::DestroyMessageConnection(uint32_t id) {
  std::lock_guard lock(mu_);
  auto it = messages_.find(id);
  if (it == messages_.end())
    return absl::NotFoundError(absl::StrFormat("no message connection 0x%x", id));
  const uint32_t route = it->second.route;
  messages_.erase(it);
  return routes_.Remove(route);
}

absl::Status HypervSynic::CreateEventConnection(uint32_t id, uint32_t vp_index, uint32_t sint) {
  std::lock_guard lock(mu_);
  if (absl::Status s = CheckTarget(id, vp_index, sint); !s.ok()) return s;
  if (id >= kEventFlags)
    return absl::InvalidArgumentError(absl::StrFormat(
        "event connection 0x%x: its flag would be past the slot's %u", id, kEventFlags));
  if (events_.contains(id))
    return absl::AlreadyExistsError(absl::StrFormat("event connection 0x%x exists", id));
  absl::StatusOr<uint32_t> route = routes_.Add(vp_index, sint, nullptr);
  if (!route.ok()) return route.status();
  const uint64_t generation = ++generations_;
  if (in_kernel_ != nullptr) {
    if (absl::Status s =
            in_kernel_->Connect(id, [this, id, generation] { Signalled(id, generation); });
        !s.ok()) {
      (void)routes_.Remove(*route);
      return s;
    }
  }
  events_.emplace(
      id, EventConnection{
              .vp_index = vp_index, .sint = sint, .route = *route, .generation = generation});
  return absl::OkStatus();
}

absl::Status HypervSynic::DestroyEventConnection(uint32_t id) {
  std::lock_guard lock(mu_);
  auto it = events_.find(id);
  if (it == events_.end())
    return absl::NotFoundError(absl::StrFormat("no event connection 0x%x", id));
  const uint32_t route = it->second.route;
  events_.erase(it);
  absl::Status status = in_kernel_ != nullptr ? in_kernel_->Disconnect(id) : absl::OkStatus();
  if (absl::Status s = routes_.Remove(route); status.ok()) status = s;
  return status;
}

uint16_t HypervSynic::PostMessage(const HypervHypercall& call) {
  if ((call.input & kFastBit) != 0) return kHvStatusInvalidHypercallCode;
  const uint64_t gpa = call.params[0];
  if ((gpa & 7) != 0) return kHvStatusInvalidAlignment;
  std::array<uint8_t, kMessageBytes> input;
  if (!memory_.Read(GuestAddress(gpa), std::span(input))) return kHvStatusInsufficientMemory;
  const uint32_t size = Load32(&input[kInputSize]);
  if (size > kPayloadBytes) return kHvStatusInvalidHypercallInput;
  const uint32_t id = Load32(&input[kInputConnectionId]) & kConnectionIdMask;

  std::lock_guard lock(mu_);
  auto it = messages_.find(id);
  if (it == messages_.end()) return kHvStatusInvalidConnectionId;
  MessageConnection& c = it->second;
  // The connection's one message, in the slot's form (type, payload size as
  // a byte, no flags, no origin, payload), replaced by every post, even one
  // refused while a message is staged: a staged message's delivery delivers
  // the latest, as QEMU's hyperv-testdev does.
  c.message.fill(0);
  std::memcpy(&c.message[kSlotType], &input[kInputType], 4);
  c.message[kSlotSizeFlags] = static_cast<uint8_t>(size);
  std::memcpy(&c.message[kSlotPayload], &input[kInputPayload], size);
  if (c.staged) return kHvStatusInsufficientBuffers;
  c.staged = true;
  DeliverStaged(c);
  return kHvStatusSuccess;
}

void HypervSynic::DeliverStaged(MessageConnection& c) {
  switch (Deliver(c)) {
    case Delivery::kDelivered:
      c.staged = false;
      break;
    case Delivery::kSlotBusy:
      break;  // until the guest acknowledges the SINT
    case Delivery::kNoPage:
      c.staged = false;
      ++dropped_messages_;
      break;
  }
}

HypervSynic::Delivery HypervSynic::Deliver(MessageConnection& c) {
  const uint64_t page = pages_[c.vp_index].msg_page;
  if (page == 0) return Delivery::kNoPage;
  std::optional<std::span<uint8_t>> slot =
      memory_.GetSpan(GuestAddress(page + uint64_t{c.sint} * kMessageBytes), kMessageBytes);
  if (!slot) return Delivery::kNoPage;
  uint8_t* s = slot->data();
  // The guest frees a slot by clearing its type, then reads msg_pending (and
  // writes EOM if it is set): set msg_pending, then look at the type again,
  // so that one of the two sees the other.
  if (Word(s + kSlotType).load() != 0) {
    Word(s + kSlotSizeFlags).fetch_or(kMsgPending);
    if (Word(s + kSlotType).load() != 0) return Delivery::kSlotBusy;
  }
  // The slot is the VMM's until the type says otherwise: the type last.
  std::memcpy(s + 8, c.message.data() + 8, kMessageBytes - 8);
  Word(s + kSlotSizeFlags).store(Load32(&c.message[kSlotSizeFlags]));
  Word(s + kSlotType).store(Load32(&c.message[kSlotType]));
  // A route that fails to raise here is one KVM refused at Add already.
  (void)routes_.Raise(c.route);
  return Delivery::kDelivered;
}

void HypervSynic::Acknowledged(uint32_t id, uint64_t generation) {
  std::lock_guard lock(mu_);
  auto it = messages_.find(id);
  if (it == messages_.end() || it->second.generation != generation || !it->second.staged) return;
  DeliverStaged(it->second);
}

uint16_t HypervSynic::SignalEvent(const HypervHypercall& call) {
  uint64_t param = call.params[0];
  if ((call.input & kFastBit) == 0) {
    if ((param & 7) != 0) return kHvStatusInvalidAlignment;
    std::optional<uint64_t> in = memory_.ReadObj<uint64_t>(GuestAddress(param));
    if (!in) return kHvStatusInsufficientMemory;
    param = *in;
  }
  if ((param & kFlagNumberBits) != 0) return kHvStatusInvalidPortId;
  if ((param & ~uint64_t{kConnectionIdMask}) != 0) return kHvStatusInvalidHypercallInput;
  const uint32_t id = static_cast<uint32_t>(param);

  std::lock_guard lock(mu_);
  auto it = events_.find(id);
  if (it == events_.end()) return kHvStatusInvalidConnectionId;
  SetFlag(id, it->second);
  return kHvStatusSuccess;
}

void HypervSynic::SetFlag(uint32_t id, const EventConnection& c) {
  const Pages& p = pages_[c.vp_index];
  std::optional<std::span<uint8_t>> word;
  if (p.synic_enabled && p.evt_page != 0)
    word = memory_.GetSpan(
        GuestAddress(p.evt_page + uint64_t{c.sint} * kMessageBytes + (id / 32) * 4), 4);
  if (!word) {
    ++dropped_events_;
    return;
  }
  const uint32_t bit = 1u << (id % 32);
  if ((Word(word->data()).fetch_or(bit) & bit) == 0) (void)routes_.Raise(c.route);
}

void HypervSynic::Signalled(uint32_t id, uint64_t generation) {
  std::lock_guard lock(mu_);
  auto it = events_.find(id);
  if (it == events_.end() || it->second.generation != generation) return;
  SetFlag(id, it->second);
}

uint64_t HypervSynic::dropped_messages() const {
  std::lock_guard lock(mu_);
  return dropped_messages_;
}

uint64_t HypervSynic::dropped_events() const {
  std::lock_guard lock(mu_);
  return dropped_events_;
}

}  // namespace minivmm
