#include "devices/hyperv_testdev.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace minivmm {

void HypervTestdev::Read(uint64_t /*offset*/, std::span<uint8_t> data, ExitContext& /*ctx*/) {
  for (uint8_t& byte : data) byte = 0;
}

void HypervTestdev::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& /*ctx*/) {
  if (offset != 0 || data.size() != 4) {
    ++ignored_writes_;
    return;
  }
  uint32_t value;
  std::memcpy(&value, data.data(), sizeof(value));
  if (absl::Status s = Request(value); !s.ok()) {
    if (refused_++ == 0) first_refusal_ = absl::StrFormat("request 0x%08x: %s", value, s.message());
  }
}

absl::Status HypervTestdev::Request(uint32_t value) {
  const uint8_t sint = value & 0xff;
  const uint8_t vp_index = (value >> 8) & 0xff;
  const uint8_t ctl = (value >> 16) & 0xff;
  const uint8_t conn_id = value >> 24;
  const auto key = std::make_pair(vp_index, sint);
  switch (ctl) {
    case kSintRouteCreate: {
      if (sint_routes_.contains(key))
        return absl::AlreadyExistsError(
            absl::StrFormat("a route to SINT %u of VP %u exists", sint, vp_index));
      if (vp_index >= synic_->cpus())
        return absl::InvalidArgumentError(
            absl::StrFormat("VP index %u: the VM has %u vCPUs", vp_index, synic_->cpus()));
      if (sint >= HypervSynic::kSints)
        return absl::InvalidArgumentError(
            absl::StrFormat("SINT %u: there are %u", sint, HypervSynic::kSints));
      absl::StatusOr<uint32_t> route = routes_->Add(vp_index, sint, nullptr);
      if (!route.ok()) return route.status();
      sint_routes_.emplace(key, *route);
      return absl::OkStatus();
    }
    case kSintRouteDestroy:
    case kSintRouteSetSint: {
      auto it = sint_routes_.find(key);
      if (it == sint_routes_.end())
        return absl::NotFoundError(absl::StrFormat("no route to SINT %u of VP %u", sint, vp_index));
      if (ctl == kSintRouteSetSint) return routes_->Raise(it->second);
      const uint32_t route = it->second;
      sint_routes_.erase(it);
      return routes_->Remove(route);
    }
    case kMsgConnCreate:
      return synic_->CreateMessageConnection(conn_id, vp_index, sint);
    case kMsgConnDestroy:
      return synic_->DestroyMessageConnection(conn_id);
    case kEvtConnCreate:
      return synic_->CreateEventConnection(conn_id, vp_index, sint);
    case kEvtConnDestroy:
      return synic_->DestroyEventConnection(conn_id);
    default:
      return absl::OkStatus();  // QEMU ignores it
  }
}

}  // namespace minivmm
