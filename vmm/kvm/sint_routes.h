// SintRoutes (vmm/core/sint_routes.h) on KVM: each route is a GSI of type
// KVM_IRQ_ROUTING_HV_SINT, numbered from 24 up after the PC machine's ISA
// routes (KvmVm::PcIsaRoutes), which every change of the table keeps. Raise
// is KVM_IRQ_LINE on that GSI, so the SINT is pending in the vCPU's SynIC
// when it returns. A route with an acknowledgement callback also has an
// irqfd with a resample eventfd on its GSI (never written: it is there for
// KVM's acknowledgement notifier), watched by one thread of this object's
// own, which calls the callback; Stop ends that thread, and must be called
// before whatever the callbacks use goes away. Where KVM has
// KVM_CAP_HYPERV_EVENTFD it is HypervEventConnections too: each connection
// an eventfd KVM writes at the guest's HvSignalEvent (KVM_HYPERV_EVENTFD),
// watched by the same thread. Thread-safe.
#ifndef MINIVMM_VMM_KVM_SINT_ROUTES_H_
#define MINIVMM_VMM_KVM_SINT_ROUTES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vmm/core/sint_routes.h"
#include "vmm/kvm/fd.h"
#include "vmm/kvm/kvm.h"

namespace minivmm {

class KvmSintRoutes final : public SintRoutes, public HypervEventConnections {
 public:
  // The first GSI a route gets, and one past the last (KVM's routing table
  // holds KVM_MAX_IRQ_ROUTES, 4096, entries).
  static constexpr uint32_t kFirstGsi = 24;
  static constexpr uint32_t kEndGsi = 1024;

  // `vm` (after CreateIrqchip and RouteIsaIrqsAsPc) must outlive this.
  static absl::StatusOr<std::unique_ptr<KvmSintRoutes>> Create(KvmVm& vm);
  ~KvmSintRoutes() override;

  absl::StatusOr<uint32_t> Add(uint32_t vp_index, uint32_t sint,
                               std::function<void()> on_ack) override;
  absl::Status Raise(uint32_t route) override;
  absl::Status Remove(uint32_t route) override;

  // Null where KVM cannot serve HvSignalEvent itself.
  HypervEventConnections* event_connections() { return has_eventfd_ ? this : nullptr; }
  absl::Status Connect(uint32_t id, std::function<void()> on_signal) override;
  absl::Status Disconnect(uint32_t id) override;

  // Ends the acknowledgement thread: no callback runs after it returns.
  void Stop();

 private:
  struct Route {
    uint32_t vp_index = 0;
    uint32_t sint = 0;
    Fd irq_fd;                                      // the irqfd's eventfd, for the resampler only
    Fd resample_fd;                                 // written by KVM at each acknowledgement
    std::shared_ptr<std::function<void()>> on_ack;  // null: none
  };

  struct EventConnection {
    Fd fd;  // written by KVM at each HvSignalEvent
    std::shared_ptr<std::function<void()>> on_signal;
  };

  KvmSintRoutes(KvmVm& vm, Fd epoll, Fd stop)
      : vm_(vm),
        epoll_(std::move(epoll)),
        stop_(std::move(stop)),
        has_eventfd_(vm.HasHypervEventfd()) {}
  // KVM_SET_GSI_ROUTING with the ISA routes and every route in routes_.
  absl::Status Commit();
  void WatchAcks();

  KvmVm& vm_;
  Fd epoll_;
  Fd stop_;
  const bool has_eventfd_;
  std::mutex mu_;
  std::map<uint32_t, Route> routes_;                 // by GSI
  std::map<uint32_t, EventConnection> connections_;  // by connection id
  std::thread acks_;
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_KVM_SINT_ROUTES_H_
