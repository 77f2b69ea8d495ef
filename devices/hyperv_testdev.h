// QEMU's `hyperv-testdev` (hw/hyperv/hyperv_testdev.c), the device
// kvm-unit-tests' hyperv_synic and hyperv_connections tests drive: one
// 32-bit write-only register at port 0x3000 whose value is a request,
//
//   (conn_id << 24) | (ctl << 16) | (vp_index << 8) | sint
//
// ctl 1 SINT_ROUTE_CREATE (vp_index, sint)   a route to that vCPU's SINT
//     2 SINT_ROUTE_DESTROY (vp_index, sint)
//     3 SINT_ROUTE_SET_SINT (vp_index, sint)  raises it once
//     4 MSG_CONN_CREATE (vp_index, sint, conn_id)  a message connection
//     5 MSG_CONN_DESTROY (conn_id)               (devices/hyperv_synic.h)
//     6 EVT_CONN_CREATE (vp_index, sint, conn_id)  an event connection
//     7 EVT_CONN_DESTROY (conn_id)
//
// Any other ctl does nothing, as in QEMU. Reads return 0. QEMU takes only
// 4-byte accesses at the port; another write is ignored here and counted.
// A request QEMU would abort on (a route or connection that exists already
// or not at all, a vCPU the VM does not have, a SINT past 15) is guest input
// here: refused, counted, the first one's reason kept for the run's notes,
// nothing changed. Not thread-safe itself: one vCPU at a time (the run
// loop's lock); the connections it makes are HypervSynic's.
#ifndef MINIVMM_DEVICES_HYPERV_TESTDEV_H_
#define MINIVMM_DEVICES_HYPERV_TESTDEV_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "devices/hyperv_synic.h"
#include "minivmm/io_device.h"
#include "vmm/core/sint_routes.h"

namespace minivmm {

class HypervTestdev final : public IoDevice {
 public:
  static constexpr uint64_t kPortBase = 0x3000;  // register on the port bus here
  static constexpr uint64_t kIoSize = 4;         // ... with this length

  enum Control : uint8_t {
    kSintRouteCreate = 1,
    kSintRouteDestroy,
    kSintRouteSetSint,
    kMsgConnCreate,
    kMsgConnDestroy,
    kEvtConnCreate,
    kEvtConnDestroy,
  };

  // `synic` and `routes` are not owned and must outlive the device.
  HypervTestdev(HypervSynic* synic, SintRoutes* routes) : synic_(synic), routes_(routes) {}

  std::string_view Name() const override { return "hyperv-testdev"; }

  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  // One request, as a 4-byte write at the port makes it.
  absl::Status Request(uint32_t value);

  // Requests refused, and the first one's reason ("" if none).
  uint64_t refused() const { return refused_; }
  const std::string& first_refusal() const { return first_refusal_; }
  // Writes that were not one 4-byte access at the port.
  uint64_t ignored_writes() const { return ignored_writes_; }

 private:
  HypervSynic* synic_;
  SintRoutes* routes_;
  std::map<std::pair<uint8_t, uint8_t>, uint32_t> sint_routes_;  // (vp_index, sint) -> route
  uint64_t refused_ = 0;
  std::string first_refusal_;
  uint64_t ignored_writes_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_HYPERV_TESTDEV_H_
