#include "vmm/kvm/sint_routes.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "vmm/core/status_macros.h"
#include "vmm/kvm/kvm_error.h"

namespace minivmm {
namespace {

constexpr uint64_t kStopToken = ~0ull;
// An epoll token: a route's GSI, or a connection id with this bit.
constexpr uint64_t kConnectionToken = 1ull << 32;

absl::StatusOr<Fd> NewEventFd() {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return KvmError("eventfd");
  return Fd(fd);
}

}  // namespace

absl::StatusOr<std::unique_ptr<KvmSintRoutes>> KvmSintRoutes::Create(KvmVm& vm) {
  const int epoll = epoll_create1(EPOLL_CLOEXEC);
  if (epoll < 0) return KvmError("epoll_create1");
  Fd epoll_fd(epoll);
  ASSIGN_OR_RETURN(Fd stop, NewEventFd());
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kStopToken;
  if (epoll_ctl(epoll_fd.get(), EPOLL_CTL_ADD, stop.get(), &ev) < 0)
    return KvmError("epoll_ctl(ADD)");
  std::unique_ptr<KvmSintRoutes> routes(
      new KvmSintRoutes(vm, std::move(epoll_fd), std::move(stop)));
  routes->acks_ = std::thread([r = routes.get()] { r->WatchAcks(); });
  return routes;
}

KvmSintRoutes::~KvmSintRoutes() { Stop(); }

void KvmSintRoutes::Stop() {
  if (!acks_.joinable()) return;
  const uint64_t one = 1;
  // An eventfd write of 1 cannot fail short of a counter at its maximum.
  [[maybe_unused]] const ssize_t n = write(stop_.get(), &one, sizeof(one));
  acks_.join();
}

void KvmSintRoutes::WatchAcks() {
  for (;;) {
    epoll_event events[16];
    const int n = epoll_wait(epoll_.get(), events, 16, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // only a bad epoll fd fails otherwise: nothing more to watch
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t token = events[i].data.u64;
      if (token == kStopToken) return;
      const uint32_t key = static_cast<uint32_t>(token);
      std::shared_ptr<std::function<void()>> callback;
      {
        std::lock_guard lock(mu_);
        int fd = -1;
        if ((token & kConnectionToken) != 0) {
          auto it = connections_.find(key);
          if (it == connections_.end()) continue;
          fd = it->second.fd.get();
          callback = it->second.on_signal;
        } else {
          auto it = routes_.find(key);
          if (it == routes_.end() || !it->second.resample_fd.valid()) continue;
          fd = it->second.resample_fd.get();
          callback = it->second.on_ack;
        }
        uint64_t count;
        [[maybe_unused]] const ssize_t r = read(fd, &count, sizeof(count));
      }
      // Outside the lock: the callback may add, raise or remove routes.
      if (callback) (*callback)();
    }
  }
}

absl::Status KvmSintRoutes::Commit() {
  std::vector<kvm_irq_routing_entry> table = KvmVm::PcIsaRoutes();
  for (const auto& [gsi, route] : routes_) {
    kvm_irq_routing_entry e{};
    e.gsi = gsi;
    e.type = KVM_IRQ_ROUTING_HV_SINT;
    e.u.hv_sint.vcpu = route.vp_index;
    e.u.hv_sint.sint = route.sint;
    table.push_back(e);
  }
  return vm_.SetGsiRouting(table);
}

absl::StatusOr<uint32_t> KvmSintRoutes::Add(uint32_t vp_index, uint32_t sint,
                                            std::function<void()> on_ack) {
  std::lock_guard lock(mu_);
  uint32_t gsi = kFirstGsi;
  for (const auto& [used, route] : routes_) {
    if (used != gsi) break;
    ++gsi;
  }
  if (gsi >= kEndGsi)
    return absl::ResourceExhaustedError(
        absl::StrFormat("no GSI left for another SINT route (%u in use)", kEndGsi - kFirstGsi));
  Route& added = routes_[gsi];
  added.vp_index = vp_index;
  added.sint = sint;
  if (absl::Status s = Commit(); !s.ok()) {
    routes_.erase(gsi);
    return s;
  }
  if (!on_ack) return gsi;
  // The resampler: KVM writes resample_fd at each acknowledgement of the GSI.
  auto undo = [&](absl::Status s) {
    routes_.erase(gsi);
    (void)Commit();  // back to the table before Add, which KVM took
    return s;
  };
  absl::StatusOr<Fd> irq_fd = NewEventFd();
  if (!irq_fd.ok()) return undo(irq_fd.status());
  absl::StatusOr<Fd> resample_fd = NewEventFd();
  if (!resample_fd.ok()) return undo(resample_fd.status());
  if (absl::Status s = vm_.AssignResampleIrqfd(gsi, irq_fd->get(), resample_fd->get()); !s.ok())
    return undo(s);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = gsi;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, resample_fd->get(), &ev) < 0) {
    const absl::Status s = KvmError("epoll_ctl(ADD)");
    (void)vm_.DeassignIrqfd(gsi, irq_fd->get());
    return undo(s);
  }
  Route& r = routes_.at(gsi);
  r.irq_fd = std::move(*irq_fd);
  r.resample_fd = std::move(*resample_fd);
  r.on_ack = std::make_shared<std::function<void()>>(std::move(on_ack));
  return gsi;
}

absl::Status KvmSintRoutes::Raise(uint32_t route) {
  {
    std::lock_guard lock(mu_);
    if (!routes_.contains(route))
      return absl::NotFoundError(absl::StrFormat("no SINT route %u", route));
  }
  // A SINT route takes level 1 only; there is nothing to lower.
  return vm_.SetIrqLine(route, true);
}

absl::Status KvmSintRoutes::Remove(uint32_t route) {
  std::lock_guard lock(mu_);
  auto it = routes_.find(route);
  if (it == routes_.end()) return absl::NotFoundError(absl::StrFormat("no SINT route %u", route));
  absl::Status status = absl::OkStatus();
  if (it->second.resample_fd.valid()) {
    epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.resample_fd.get(), nullptr);
    status = vm_.DeassignIrqfd(route, it->second.irq_fd.get());
  }
  routes_.erase(it);
  if (absl::Status s = Commit(); status.ok()) status = s;
  return status;
}

absl::Status KvmSintRoutes::Connect(uint32_t id, std::function<void()> on_signal) {
  if (!has_eventfd_)
    return absl::FailedPreconditionError("this host's KVM lacks KVM_CAP_HYPERV_EVENTFD");
  std::lock_guard lock(mu_);
  if (connections_.contains(id))
    return absl::AlreadyExistsError(absl::StrFormat("event connection 0x%x exists", id));
  ASSIGN_OR_RETURN(Fd fd, NewEventFd());
  RETURN_IF_ERROR(vm_.SetHypervEventfd(id, fd.get()));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kConnectionToken | id;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &ev) < 0) {
    const absl::Status s = KvmError("epoll_ctl(ADD)");
    (void)vm_.SetHypervEventfd(id, -1);
    return s;
  }
  connections_.emplace(id, EventConnection{std::move(fd), std::make_shared<std::function<void()>>(
                                                              std::move(on_signal))});
  return absl::OkStatus();
}

absl::Status KvmSintRoutes::Disconnect(uint32_t id) {
  std::lock_guard lock(mu_);
  auto it = connections_.find(id);
  if (it == connections_.end())
    return absl::NotFoundError(absl::StrFormat("no event connection 0x%x", id));
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.fd.get(), nullptr);
  absl::Status status = vm_.SetHypervEventfd(id, -1);
  connections_.erase(it);
  return status;
}

}  // namespace minivmm
