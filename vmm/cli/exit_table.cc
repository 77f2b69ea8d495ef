#include "vmm/cli/exit_table.h"

#include <fmt/format.h>

namespace minivmm::cli {
namespace {

using nlohmann::json;

void Row(std::string& out, std::string_view what, const json& ops, const json& exits,
         std::string_view source) {
  fmt::format_to(std::back_inserter(out), "  {:<28} {:>12} {:>12}  {}\n", what,
                 ops.is_null() ? std::string("-") : ops.dump(),
                 exits.is_null() ? std::string("-") : exits.dump(), source);
}

}  // namespace

std::string RenderExitTable(const json& record) {
  std::string out;
  const json& result = record["result"];
  fmt::format_to(std::back_inserter(out), "minivmm: {} ({}), {:.3f} s\n",
                 result["stop_reason"].get<std::string>(), result["detail"].get<std::string>(),
                 result["elapsed_ns"].get<int64_t>() / 1e9);

  fmt::format_to(std::back_inserter(out), "\n  {:<28} {:>12} {:>12}  {}\n", "exits by cause", "ops",
                 "exits", "source");
  for (const auto& [name, c] : record["causes"]["causes"].items()) {
    Row(out, name, c["ops"], c["exits"], "vmm");
  }
  Row(out, "  of which irq window", nullptr, record["causes"]["causes"]["if_set"]["host_dependent_exits"],
      "vmm (host-dependent)");

  fmt::format_to(std::back_inserter(out), "\n  {:<28} {:>12} {:>12}  {}\n", "hypercalls", "ops",
                 "exits", "source");
  for (const auto& [name, c] : record["hypercalls"]["calls"].items()) {
    Row(out, name, c["ops"], c["exits"], c["errors"].get<uint64_t>() > 0
                                             ? fmt::format("vmm ({} errors)", c["errors"].get<uint64_t>())
                                             : std::string("vmm"));
  }

  fmt::format_to(std::back_inserter(out), "\n  {:<28} {:>12} {:>12}  {}\n", "exits by reason", "",
                 "exits", "source");
  for (const auto& [name, n] : record["exits"]["by_reason"].items()) Row(out, name, nullptr, n, "vmm");
  Row(out, "total", nullptr, record["exits"]["total"], "vmm");
  for (const char* bus : {"pio_by_device", "mmio_by_device"}) {
    for (const auto& [name, n] : record["exits"][bus].items()) {
      if (n.get<uint64_t>() == 0) continue;
      Row(out, fmt::format("{} {}", bus[0] == 'p' ? "pio" : "mmio", name), nullptr, n, "vmm");
    }
  }

  const json& host = record["host_counters"]["deltas"];
  if (!host.empty()) {
    fmt::format_to(std::back_inserter(out), "\n  {:<28} {:>12} {:>12}  {}\n", "host counters", "",
                   "delta", "source");
    for (const auto& [name, n] : host.items()) {
      if (n.get<uint64_t>() != 0) Row(out, name, nullptr, n, "kvm-stats (host-dependent)");
    }
  }
  return out;
}

}  // namespace minivmm::cli
