// The VMM's side of Hyper-V's SynIC (VmConfig::hyperv), as QEMU's
// hw/hyperv/hyperv.c is QEMU's: KVM runs each vCPU's SynIC in the kernel;
// this keeps what the VMM needs of it and serves the two hypercalls KVM
// leaves to the VMM, for connections a device (devices/hyperv_testdev.h)
// creates:
//
//  - Each vCPU's SynIC pages, from its control writes (HypervHost): the
//    message page (SIMP, used when its enable bit is set) and the event
//    flags page (SIEFP, used when its enable bit and SCONTROL's are set).
//  - A message connection (id -> vCPU, SINT): HvPostMessage (0x5c, slow
//    only; its input a 256-byte hv_input_post_message at an 8-byte aligned
//    guest-physical address) copies the message's type, size and payload into
//    the vCPU's message slot for the SINT (the message page's 256-byte slot
//    `sint`) when the slot is free (type 0) and raises the SINT; when it is
//    not, it sets the slot's msg_pending flag and keeps the message staged,
//    to be delivered when the guest next acknowledges the SINT (EOM, or an
//    EOI of its vector) with the slot free. Both are answered with success,
//    as QEMU answers them. A post while one is staged gets
//    HV_STATUS_INSUFFICIENT_BUFFERS, and its message still replaces the
//    staged one, which is what QEMU's device delivers (it keeps one message
//    per connection and posts it again at the acknowledgement).
//  - An event connection (id -> vCPU, SINT): HvSignalEvent (0x5d; fast, or
//    slow with its 8-byte input at an aligned address) sets bit `id` of the
//    vCPU's event flags for the SINT (the event flags page's 256-byte slot
//    `sint`) and raises the SINT if the bit was clear. Where the machine has
//    HypervEventConnections (KVM's KVM_HYPERV_EVENTFD), each event
//    connection is given to KVM, as QEMU gives it: KVM answers the guest's
//    HvSignalEvent in the kernel, with no exit to the VMM, and the flag is
//    set on the machine's thread right after; otherwise each HvSignalEvent
//    reaches the VMM, one `hyperv` exit, and is served on the vCPU's thread.
//  - Any other hypercall: HV_STATUS_INVALID_HYPERCALL_CODE.
//
// The statuses, as QEMU gives them (vmm/core/hyperv_host.h): a fast
// HvPostMessage, HV_STATUS_INVALID_HYPERCALL_CODE; a misaligned input,
// HV_STATUS_INVALID_ALIGNMENT; an input beyond RAM,
// HV_STATUS_INSUFFICIENT_MEMORY; a payload over 240 bytes, or reserved bits
// of a connection id set, HV_STATUS_INVALID_HYPERCALL_INPUT; an event's flag
// number (bits 32-47) not 0, HV_STATUS_INVALID_PORT_ID; no such connection,
// HV_STATUS_INVALID_CONNECTION_ID.
//
// What the guest owns is untrusted: a page address beyond RAM is a page that
// is not there. A message or event whose vCPU has no page enabled (QEMU
// aborts there) is dropped and counted (dropped_messages, dropped_events),
// the hypercall still succeeding, as the connection exists. The slot and the
// flags are written with atomic operations, so that a guest clearing a slot
// on another vCPU either sees msg_pending or leaves the slot free for the
// delivery; KVM's own message producers (SynIC timers) write the same page
// from the vCPU's thread, and nothing orders them with this, so a
// connection shares no SINT with a timer. Thread-safe: the vCPUs' threads
// and the acknowledgement thread of SintRoutes.
#ifndef MINIVMM_DEVICES_HYPERV_SYNIC_H_
#define MINIVMM_DEVICES_HYPERV_SYNIC_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "minivmm/guest_memory.h"
#include "vmm/core/hyperv_host.h"
#include "vmm/core/sint_routes.h"

namespace minivmm {

class HypervSynic final : public HypervHost {
 public:
  static constexpr uint32_t kSints = 16;
  static constexpr uint16_t kPostMessage = 0x5c;
  static constexpr uint16_t kSignalEvent = 0x5d;
  static constexpr uint32_t kMessageBytes = 256;  // a slot; hv_input_post_message too
  static constexpr uint32_t kPayloadBytes = 240;
  static constexpr uint32_t kConnectionIdMask = 0x00ffffff;

  // `memory`, `routes` and `in_kernel` (null: none) must outlive this, their
  // callbacks included (stop them before this goes).
  HypervSynic(const GuestMemory& memory, SintRoutes& routes, uint32_t cpus,
              HypervEventConnections* in_kernel = nullptr);

  void SynicControlWritten(uint32_t cpu, const SynicControl& control) override;
  uint16_t Hypercall(uint32_t cpu, const HypervHypercall& call) override;

  // Connections, by id (bits 0-23; an event connection's id is also its
  // flag's number, below 2048). InvalidArgument for a vCPU, SINT or id out
  // of range, AlreadyExists / NotFound for an id in use / not in use,
  // or the route's own error.
  absl::Status CreateMessageConnection(uint32_t id, uint32_t vp_index, uint32_t sint);
  absl::Status DestroyMessageConnection(uint32_t id);
  absl::Status CreateEventConnection(uint32_t id, uint32_t vp_index, uint32_t sint);
  absl::Status DestroyEventConnection(uint32_t id);

  uint32_t cpus() const { return static_cast<uint32_t>(pages_.size()); }
  // Holds back this object's writes to guest memory, all made under its
  // lock, while the caller changes the host's mapping of RAM.
  std::unique_lock<std::mutex> HoldGuestWrites() const { return std::unique_lock(mu_); }
  uint64_t dropped_messages() const;
  uint64_t dropped_events() const;

 private:
  struct Pages {
    bool synic_enabled = false;
    uint64_t msg_page = 0;  // 0: none
    uint64_t evt_page = 0;  // 0: none
  };
  struct MessageConnection {
    uint32_t vp_index;
    uint32_t sint;
    uint32_t route;
    uint64_t generation;  // tells this connection from an earlier one with its id
    bool staged = false;  // `message` waits for its slot
    std::array<uint8_t, kMessageBytes> message{};
  };
  struct EventConnection {
    uint32_t vp_index;
    uint32_t sint;
    uint32_t route;
    uint64_t generation;
  };
  enum class Delivery { kDelivered, kSlotBusy, kNoPage };

  absl::Status CheckTarget(uint32_t id, uint32_t vp_index, uint32_t sint) const;
  uint16_t PostMessage(const HypervHypercall& call);
  uint16_t SignalEvent(const HypervHypercall& call);
  // Tries to put the connection's staged message into its slot (mu_ held).
  Delivery Deliver(MessageConnection& c);
  // Deliver, and what follows for the staged message: delivered, still
  // waiting for its slot, or dropped and counted (mu_ held).
  void DeliverStaged(MessageConnection& c);
  // The guest acknowledged the SINT of message connection `id` of that
  // generation: a staged message tries its slot again.
  void Acknowledged(uint32_t id, uint64_t generation);
  // Connection `id`'s flag set, its SINT raised if the flag was clear (mu_
  // held).
  void SetFlag(uint32_t id, const EventConnection& c);
  // KVM served an HvSignalEvent for event connection `id` of that
  // generation.
  void Signalled(uint32_t id, uint64_t generation);

  const GuestMemory& memory_;
  SintRoutes& routes_;
  HypervEventConnections* in_kernel_;
  mutable std::mutex mu_;
  std::vector<Pages> pages_;  // by VP index
  std::map<uint32_t, MessageConnection> messages_;
  std::map<uint32_t, EventConnection> events_;
  uint64_t generations_ = 0;
  uint64_t dropped_messages_ = 0;
  uint64_t dropped_events_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_HYPERV_SYNIC_H_
