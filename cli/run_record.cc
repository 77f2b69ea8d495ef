#include "cli/run_record.h"

#include "absl/time/time.h"
#include "cli/report_value.h"
#include "minivmm_abi/hypercall.h"

namespace minivmm::cli {
namespace {

using nlohmann::json;

json Exits(const RunResult& r) {
  json by_reason = json::object();
  uint64_t total = 0;
  for (int i = 0; i < static_cast<int>(ExitReason::kCount); ++i) {
    uint64_t n = r.stats.by_reason[i];
    total += n;
    if (n != 0) by_reason[std::string(ExitReasonName(static_cast<ExitReason>(i)))] = n;
  }
  json pio = json::object(), mmio = json::object();
  for (size_t i = 0; i < r.pio_devices.size(); ++i)
    pio[r.pio_devices[i]] = r.stats.pio_by_device[i];
  for (size_t i = 0; i < r.mmio_devices.size(); ++i)
    mmio[r.mmio_devices[i]] = r.stats.mmio_by_device[i];
  pio["unclaimed"] = r.stats.pio_unclaimed;
  mmio["unclaimed"] = r.stats.mmio_unclaimed;
  json per_vcpu = json::array();
  for (size_t v = 0; v < r.per_vcpu.size(); ++v) {
    json reasons = json::object();
    uint64_t vcpu_total = 0;
    for (int i = 0; i < static_cast<int>(ExitReason::kCount); ++i) {
      uint64_t n = r.per_vcpu[v].by_reason[i];
      vcpu_total += n;
      if (n != 0) reasons[std::string(ExitReasonName(static_cast<ExitReason>(i)))] = n;
    }
    json hypercall_exits = json::object();
    for (uint32_t nr = 0; nr < MVMM_HC_MAX; ++nr) {
      const uint64_t n = r.per_vcpu[v].hc_exits[nr];
      if (n == 0) continue;
      const std::string& name = nr < r.hypercall_names.size() ? r.hypercall_names[nr] : "";
      hypercall_exits[name.empty() ? "nr" + std::to_string(nr) : name] = n;
    }
    // The causes this vCPU's exits and operations had (those with any), and
    // the IPIs it took and the flushes it deferred.
    json causes = json::object();
    for (int i = 0; i < static_cast<int>(Cause::kCount); ++i) {
      const CauseCount& c = r.per_vcpu[v].causes[i];
      if (c.ops != 0 || c.exits != 0)
        causes[std::string(CauseName(static_cast<Cause>(i)))] = {{"ops", c.ops},
                                                                 {"exits", c.exits}};
    }
    per_vcpu.push_back({{"vcpu", v},
                        {"total", vcpu_total},
                        {"by_reason", reasons},
                        {"hypercall_exits", hypercall_exits},
                        {"causes", causes},
                        {"ipi_injections", r.per_vcpu[v].ipi_injections},
                        {"tlb_flushes_deferred", r.per_vcpu[v].tlb_flushes_deferred},
                        {"lock_waits_slept", r.per_vcpu[v].lock_waits_slept},
                        {"lock_wakes_by_kick", r.per_vcpu[v].lock_wakes_by_kick},
                        {"directed_yields", r.per_vcpu[v].directed_yields}});
  }
  return {{"source", "vmm"},      {"total", total},         {"by_reason", by_reason},
          {"pio_by_device", pio}, {"mmio_by_device", mmio}, {"per_vcpu", per_vcpu}};
}

json Hypercalls(const RunResult& r) {
  json out = json::object();
  for (uint32_t nr = 0; nr < MVMM_HC_MAX; ++nr) {
    const std::string& name = nr < r.hypercall_names.size() ? r.hypercall_names[nr] : "";
    if (r.stats.hc_ops[nr] == 0 && r.stats.hc_exits[nr] == 0) continue;
    out[name.empty() ? "nr" + std::to_string(nr) : name] = {{"nr", nr},
                                                            {"exits", r.stats.hc_exits[nr]},
                                                            {"ops", r.stats.hc_ops[nr]},
                                                            {"errors", r.stats.hc_errors[nr]}};
  }
  return {{"source", "vmm"},
          {"calls", out},
          {"bad_number", r.stats.hc_bad_number},
          {"refused_cpl3", r.stats.hc_refused_cpl3}};
}

json Causes(const RunResult& r) {
  json out = json::object();
  for (int i = 0; i < static_cast<int>(Cause::kCount); ++i) {
    const CauseCount& c = r.stats.causes[i];
    out[std::string(CauseName(static_cast<Cause>(i)))] = {{"ops", c.ops}, {"exits", c.exits}};
  }
  // Interrupt-window exits are counted under if_set but depend on when the
  // host opens the window (docs/hosts.md).
  out["if_set"]["host_dependent_exits"] =
      r.stats.by_reason[static_cast<int>(ExitReason::kIrqWindowOpen)];
  json histogram = json::array();
  for (uint64_t n : r.stats.multicall_entries_histogram) histogram.push_back(n);
  return {{"source", "vmm"},
          {"causes", out},
          {"multicall_entries_histogram_log2", histogram},
          {"gdt_stores",
           {{"applied", r.stats.gdt_stores_applied}, {"rejected", r.stats.gdt_stores_rejected}}},
          {"timer_injections", r.stats.timer_injections},
          {"ipi_injections", r.stats.ipi_injections},
          {"tlb_flushes_deferred", r.stats.tlb_flushes_deferred},
          {"lock_waits_slept", r.stats.lock_waits_slept},
          {"lock_wakes_by_kick", r.stats.lock_wakes_by_kick},
          {"directed_yields", r.stats.directed_yields}};
}

// The wasted-exit analysis (docs/wasted-exits.md); null when it did not run.
json Wasted(const RunResult& r) {
  if (!r.stats.waste_analysed) return nullptr;
  const auto count = [](const CauseCount& c) { return json{{"ops", c.ops}, {"exits", c.exits}}; };
  json by_cause = json::object();
  for (int i = 0; i < static_cast<int>(Cause::kCount); ++i)
    by_cause[std::string(CauseName(static_cast<Cause>(i)))] = count(r.stats.wasted_by_cause[i]);
  json by_hypercall = json::object();
  for (uint32_t nr = 0; nr < MVMM_HC_MAX; ++nr) {
    if (r.stats.hc_ops[nr] == 0 && r.stats.hc_exits[nr] == 0) continue;
    const std::string& name = nr < r.hypercall_names.size() ? r.hypercall_names[nr] : "";
    by_hypercall[name.empty() ? "nr" + std::to_string(nr) : name] =
        count(r.stats.wasted_by_hypercall[nr]);
  }
  json by_reason = json::object();
  for (int i = 0; i < static_cast<int>(WasteReason::kCount); ++i)
    by_reason[std::string(WasteReasonName(static_cast<WasteReason>(i)))] =
        count(r.stats.wasted_by_reason[i]);
  return {{"source", "vmm"},
          {"by_cause", by_cause},
          {"by_hypercall", by_hypercall},
          {"by_reason", by_reason}};
}

json Tristate(const std::optional<bool>& v) { return v ? json(*v) : json(nullptr); }

// The probe's answers (null: not measured) and its evidence, or nulls and
// no "probe" object when no probe ran.
void AddBehaviour(const HostInfo& host, json& out) {
  if (!host.behaviour) {
    out["ring0_emulated"] = out["ring3_nm"] = out["vmcall_in_kernel"] = nullptr;
    return;
  }
  const HostBehaviour& b = *host.behaviour;
  out["ring0_emulated"] = Tristate(b.ring0_emulated.value);
  out["ring3_nm"] = Tristate(b.ring3_nm.value);
  out["vmcall_in_kernel"] = Tristate(b.vmcall_in_kernel.value);
  out["probe"] = {{"workload", "hostprobe"},
                  {"runs", b.runs},
                  {"elapsed_ns", absl::ToInt64Nanoseconds(b.elapsed)},
                  {"loop_insns", b.loop_insns},
                  {"insn_emulation", b.insn_emulation ? json(*b.insn_emulation) : json(nullptr)},
                  {"vmcall_rax", b.vmcall_rax ? json(*b.vmcall_rax) : json(nullptr)},
                  {"vmcall_wait_ns", absl::ToInt64Nanoseconds(b.vmcall_wait)},
                  {"evidence",
                   {{"ring0_emulated", b.ring0_emulated.evidence},
                    {"ring3_nm", b.ring3_nm.evidence},
                    {"vmcall_in_kernel", b.vmcall_in_kernel.evidence}}}};
}

// What the guest of this very run found out by itself (its boot probe).
json GuestDetected(const RunResult& r) {
  json ring3_nm = nullptr;
  for (const auto& [key, value] : r.reports.entries)
    if (key == "kernel.ring3_nm") ring3_nm = value != "0";
  return {{"ring3_nm", ring3_nm}};
}

}  // namespace

void ProbeBehaviourInto(HostInfo& host, const std::string& kvm_device) {
  absl::StatusOr<HostBehaviour> b = ProbeHostBehaviour("", kvm_device);
  if (b.ok()) {
    host.behaviour = *std::move(b);
    return;
  }
  HostBehaviour failed;
  std::string why = "the probe could not run: " + std::string(b.status().message());
  failed.ring0_emulated.evidence = failed.ring3_nm.evidence = failed.vmcall_in_kernel.evidence =
      why;
  host.behaviour = std::move(failed);
}

json HostRecord(const HostInfo& host) {
  json caps = json::object();
  for (const HostCapability& c : host.capabilities) caps[c.name] = c.value;
  json out = {{"kernel", host.host_kernel},
              {"cpu", host.cpu_model},
              {"kvm_module", host.kvm_module},
              {"kvm_api_version", host.kvm_api_version},
              {"kvm_capabilities", caps}};
  AddBehaviour(host, out);
  return out;
}

namespace {

// How each vCPU's part of the run ended.
json VcpuStops(const RunResult& r) {
  json out = json::array();
  for (size_t v = 0; v < r.vcpu_stops.size(); ++v) {
    const VcpuStop& s = r.vcpu_stops[v];
    out.push_back({{"vcpu", v},
                   {"stop_reason", std::string(StopReasonName(s.reason))},
                   {"detail", s.detail},
                   {"with_vm", s.with_vm},
                   {"idle", s.idle}});
  }
  return out;
}

}  // namespace

json MakeRunRecord(const VmConfig& config, const RunResult& r, const HostInfo* host,
                   const std::string& kernel_digest) {
  json provenance = {{"tool", "minivmm"},
                     {"tool_version", MINIVMM_VERSION},
                     {"guest_image", {{"path", config.kernel_path}, {"digest", kernel_digest}}}};
  if (host != nullptr) provenance["host"] = HostRecord(*host);
  provenance["host"]["guest_detected"] = GuestDetected(r);
  json host_counters = json::object();
  for (const HostCounter& c : r.host_counters) host_counters[c.name] = c.delta;
  json reports = json::object();
  for (const auto& [key, value] : r.reports.entries) reports[key] = ReportValueJson(value);
  json registers = json::object();
  for (const auto& [name, value] : r.registers) registers[name] = value;
  return {
      {"schema", "minivmm.run"},
      {"schema_version", kRunRecordSchemaVersion},
      {"provenance", provenance},
      {"config",
       {{"memory_bytes", config.memory_bytes},
        {"kernel", config.kernel_path},
        {"cmdline", config.cmdline},
        {"timer_hz", config.timer_hz},
        {"cpus", config.cpus},
        {"analyse_waste", config.analyse_waste}}},
      {"result",
       {{"stop_reason", std::string(StopReasonName(r.reason))},
        {"exit_code", r.exit_code},
        {"detail", r.detail},
        {"stopped_by_vcpu", r.stopped_by_vcpu < 0 ? json(nullptr) : json(r.stopped_by_vcpu)},
        {"vcpus", VcpuStops(r)},
        {"elapsed_ns", absl::ToInt64Nanoseconds(r.elapsed)},
        {"guest_tsc_khz", r.guest_tsc_khz},
        {"registers", registers},
        {"notes", r.notes}}},
      {"exits", Exits(r)},
      {"hypercalls", Hypercalls(r)},
      {"causes", Causes(r)},
      {"wasted", Wasted(r)},
      {"host_counters",
       {{"source", "kvm-stats"}, {"host_dependent", true}, {"deltas", host_counters}}},
      {"guest", {{"source", "guest"}, {"reports", reports}}},
  };
}

}  // namespace minivmm::cli
