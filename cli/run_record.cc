#include "cli/run_record.h"

#include <fstream>
#include <map>
#include <string>
#include <utility>

#include "absl/time/time.h"
#include "cli/report_value.h"
#include "minivmm_abi/hypercall.h"

namespace minivmm::cli {
namespace {

using nlohmann::json;

// A hypercall's name in the record: its registered name, else "nrN".
std::string HypercallKey(const RunResult& r, uint32_t nr) {
  const std::string& name = nr < r.hypercall_names.size() ? r.hypercall_names[nr] : "";
  return name.empty() ? "nr" + std::to_string(nr) : name;
}

// Exits by KVM exit reason (the non-zero ones) and their total.
json ByReason(const ExitStats& s, uint64_t& total) {
  json by_reason = json::object();
  total = 0;
  for (int i = 0; i < static_cast<int>(ExitReason::kCount); ++i) {
    const uint64_t n = s.by_reason[i];
    total += n;
    if (n != 0) by_reason[std::string(ExitReasonName(static_cast<ExitReason>(i)))] = n;
  }
  return by_reason;
}

// Every hypercall `s` saw: its number, exits, operations and errors.
json HypercallCalls(const RunResult& r, const ExitStats& s) {
  json out = json::object();
  for (uint32_t nr = 0; nr < MVMM_HC_MAX; ++nr) {
    if (s.hc_ops[nr] == 0 && s.hc_exits[nr] == 0) continue;
    out[HypercallKey(r, nr)] = {
        {"nr", nr}, {"exits", s.hc_exits[nr]}, {"ops", s.hc_ops[nr]}, {"errors", s.hc_errors[nr]}};
  }
  return out;
}

// Operations and exits of every cause (Cause), zeros included.
// MINIVMM_SCALAR_COUNTER_LIST's counters of `s`, each under its own name.
void AddScalarCounters(json& out, const ExitStats& s) {
#define MINIVMM_SCALAR_KEY_(name) out[#name] = s.name;
  MINIVMM_SCALAR_COUNTER_LIST(MINIVMM_SCALAR_KEY_)
#undef MINIVMM_SCALAR_KEY_
}

json CauseCounts(const ExitStats& s) {
  json out = json::object();
  for (int i = 0; i < static_cast<int>(Cause::kCount); ++i) {
    const CauseCount& c = s.causes[i];
    out[std::string(CauseName(static_cast<Cause>(i)))] = {{"ops", c.ops}, {"exits", c.exits}};
  }
  // Interrupt-window exits are counted under if_set but depend on when the
  // host opens the window (docs/hosts.md).
  out["if_set"]["host_dependent_exits"] = s.by_reason[static_cast<int>(ExitReason::kIrqWindowOpen)];
  return out;
}

// The wasted-exit analysis of `s` (docs/wasted-exits.md); null when it did
// not run.
json WastedCounts(const RunResult& r, const ExitStats& s) {
  if (!s.waste_analysed) return nullptr;
  const auto count = [](const CauseCount& c) { return json{{"ops", c.ops}, {"exits", c.exits}}; };
  json by_cause = json::object();
  for (int i = 0; i < static_cast<int>(Cause::kCount); ++i)
    by_cause[std::string(CauseName(static_cast<Cause>(i)))] = count(s.wasted_by_cause[i]);
  json by_hypercall = json::object();
  for (uint32_t nr = 0; nr < MVMM_HC_MAX; ++nr) {
    if (s.hc_ops[nr] == 0 && s.hc_exits[nr] == 0) continue;
    by_hypercall[HypercallKey(r, nr)] = count(s.wasted_by_hypercall[nr]);
  }
  json by_reason = json::object();
  for (int i = 0; i < static_cast<int>(WasteReason::kCount); ++i)
    by_reason[std::string(WasteReasonName(static_cast<WasteReason>(i)))] =
        count(s.wasted_by_reason[i]);
  json same_value = json::object();
  for (int i = 0; i < static_cast<int>(Cause::kCount); ++i)
    same_value[std::string(CauseName(static_cast<Cause>(i)))] =
        count(s.wasted_same_value_by_cause[i]);
  return {{"by_cause", by_cause},
          {"by_hypercall", by_hypercall},
          {"by_reason", by_reason},
          {"same_value_by_cause", same_value},
          {"ts_pairs_kept_by_guest", s.ts_pairs_kept_by_guest}};
}

// One vCPU's counts: the run-wide groups (exits by reason, hypercalls,
// causes, wasted) of its ExitStats alone.
json VcpuCounts(const RunResult& r, size_t v) {
  const ExitStats& s = r.per_vcpu[v];
  uint64_t total = 0;
  json by_reason = ByReason(s, total);
  json hypercall_exits = json::object();
  for (uint32_t nr = 0; nr < MVMM_HC_MAX; ++nr)
    if (s.hc_exits[nr] != 0) hypercall_exits[HypercallKey(r, nr)] = s.hc_exits[nr];
  json out = {{"vcpu", v},
              {"total", total},
              {"by_reason", by_reason},
              {"hypercall_exits", hypercall_exits},
              {"hypercalls", HypercallCalls(r, s)},
              {"causes", CauseCounts(s)},
              {"wasted", WastedCounts(r, s)}};
  AddScalarCounters(out, s);
  return out;
}

json Exits(const RunResult& r) {
  uint64_t total = 0;
  json by_reason = ByReason(r.stats, total);
  json pio = json::object(), mmio = json::object();
  for (size_t i = 0; i < r.pio_devices.size(); ++i)
    pio[r.pio_devices[i]] = r.stats.pio_by_device[i];
  for (size_t i = 0; i < r.mmio_devices.size(); ++i)
    mmio[r.mmio_devices[i]] = r.stats.mmio_by_device[i];
  pio["unclaimed"] = r.stats.pio_unclaimed;
  mmio["unclaimed"] = r.stats.mmio_unclaimed;
  json per_vcpu = json::array();
  for (size_t v = 0; v < r.per_vcpu.size(); ++v) per_vcpu.push_back(VcpuCounts(r, v));
  return {{"source", "vmm"},      {"total", total},         {"by_reason", by_reason},
          {"pio_by_device", pio}, {"mmio_by_device", mmio}, {"per_vcpu", per_vcpu}};
}

json Hypercalls(const RunResult& r) {
  return {{"source", "vmm"},
          {"calls", HypercallCalls(r, r.stats)},
          {"bad_number", r.stats.hc_bad_number},
          {"refused_cpl3", r.stats.hc_refused_cpl3}};
}

json Causes(const RunResult& r) {
  json histogram = json::array();
  for (uint64_t n : r.stats.multicall_entries_histogram) histogram.push_back(n);
  json out = {
      {"source", "vmm"},
      {"causes", CauseCounts(r.stats)},
      {"multicall_entries_histogram_log2", histogram},
      {"gdt_stores",
       {{"applied", r.stats.gdt_stores_applied}, {"rejected", r.stats.gdt_stores_rejected}}}};
  AddScalarCounters(out, r.stats);
  return out;
}

// Exits by (reason, `what`: a RIP or a stack), each with those of them that
// reached minivmm: the section's `by_rip` and `by_stack`.
template <typename Key>
json ByReasonAnd(const char* what, const std::map<std::pair<std::string, Key>, uint64_t>& exits,
                 const std::map<std::pair<std::string, Key>, uint64_t>& to_vmm) {
  json out = json::array();
  for (const auto& [key, n] : exits) {
    const auto kept = to_vmm.find(key);
    out.push_back({{"reason", key.first},
                   {what, key.second},
                   {"exits", n},
                   {"to_vmm", kept == to_vmm.end() ? 0 : kept->second}});
  }
  return out;
}

// RunResult::kernel_exits (docs/run-record.md "kernel_exits"); null when
// the run did not ask for them.
json KernelExitsJson(const KernelExitCounts& c, bool stacks) {
  auto by_name = [](const std::map<std::string, uint64_t>& counts) {
    json out = json::object();
    for (const auto& [name, n] : counts) out[name] = n;
    return out;
  };
  json by_detail = json::array();
  for (const auto& [key, n] : c.by_reason_detail)
    by_detail.push_back({{"reason", key.first}, {"detail", key.second}, {"exits", n}});
  json out = {{"exits", c.exits},
              {"lost", c.lost},
              {"by_reason", by_name(c.by_reason)},
              {"to_vmm_by_reason", by_name(c.to_vmm_by_reason)},
              {"returns", by_name(c.returns)},
              {"by_detail", by_detail},
              {"by_rip", ByReasonAnd("rip", c.by_reason_rip, c.to_vmm_by_reason_rip)}};
  if (stacks) {
    out["by_stack"] = ByReasonAnd("stack", c.by_reason_stack, c.to_vmm_by_reason_stack);
    out["unstacked"] = c.unstacked;
  }
  return out;
}

json KernelExits(const RunResult& r) {
  if (r.kernel_exits.empty()) return nullptr;
  KernelExitCounts all;
  json per_vcpu = json::array();
  for (const KernelExitCounts& c : r.kernel_exits) {
    all.Add(c);
    per_vcpu.push_back(KernelExitsJson(c, r.kernel_exit_stacks));
  }
  json out = KernelExitsJson(all, r.kernel_exit_stacks);
  out["source"] = "kvm:kvm_exit";
  out["stacks"] = r.kernel_exit_stacks;
  out["per_vcpu"] = std::move(per_vcpu);
  json phases = json::array();
  for (const KernelExitPhase& p : r.kernel_exit_phases) {
    json one = KernelExitsJson(p.counts, r.kernel_exit_stacks);
    one.erase("lost");
    one["line"] = p.line;
    phases.push_back(std::move(one));
  }
  out["phases"] = std::move(phases);
  return out;
}

// The wasted-exit analysis (docs/wasted-exits.md); null when it did not run.
json Wasted(const RunResult& r) {
  json out = WastedCounts(r, r.stats);
  if (out.is_null()) return out;
  out["source"] = "vmm";
  return out;
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
                  {"cached", b.cached},
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

void ProbeBehaviourInto(HostInfo& host, const std::string& kvm_device, const std::string& kernel) {
  absl::StatusOr<HostBehaviour> b = ProbeHostBehaviour(kernel, kvm_device);
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
              {"kvm_parameters", host.kvm_parameters},
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

// Each vCPU's recent exits, oldest first (docs/run-record.md).
json RecentExits(const RunResult& r) {
  json out = json::array();
  for (const std::vector<RecentExit>& exits : r.recent_exits) {
    json one = json::array();
    for (const RecentExit& e : exits) {
      json entry = {
          {"sequence", e.sequence},
          {"reason", e.reason == ExitReason::kCount ? std::string("run_failed")
                                                    : std::string(ExitReasonName(e.reason))},
          {"hypercall", e.hypercall},
          {"rip", e.rip},
          {"rflags", e.rflags},
          {"cpl", e.cpl},
          {"rax", e.rax},
          {"rdi", e.rdi},
          {"rsi", e.rsi},
          {"injected_vector", e.injected_vector},
          {"text", DescribeRecentExit(e, r.hypercall_names)}};
      if (e.reason == ExitReason::kIo || e.reason == ExitReason::kMmio) {
        entry["address"] = e.address;
        entry["size"] = e.size;
        entry["write"] = e.write;
        if (e.write) entry["data"] = e.detail;
      } else {
        entry["detail"] = e.detail;
      }
      one.push_back(std::move(entry));
    }
    out.push_back(std::move(one));
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
       {{"machine", std::string(MachineName(config.machine))},
        {"memory_bytes", config.memory_bytes},
        {"kernel", config.kernel_path},
        {"initrd", config.initrd_path},
        {"pit", config.pit},
        {"pc_testdev", config.pc_testdev},
        {"hyperv", config.hyperv},
        {"hyperv_testdev", config.hyperv_testdev},
        {"split_irqchip", config.split_irqchip},
        {"intel_iommu", config.intel_iommu},
        {"edu", config.edu},
        {"cpu_features", CpuFeaturesText(config.cpu_features)},
        {"cpu_vendor", config.cpu_vendor},
        {"cpu_enforce", config.cpu_enforce},
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
        {"recent_exits", RecentExits(r)},
        {"notes", r.notes}}},
      {"exits", Exits(r)},
      {"hypercalls", Hypercalls(r)},
      {"causes", Causes(r)},
      {"wasted", Wasted(r)},
      {"host_counters",
       {{"source", "kvm-stats"}, {"host_dependent", true}, {"deltas", host_counters}}},
      {"kernel_exits", KernelExits(r)},
      {"guest", {{"source", "guest"}, {"reports", reports}}},
  };
}

bool ReadRecord(const std::string& path, nlohmann::json* record, std::string* schema,
                std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  *record = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (record->is_discarded() || !record->is_object()) {
    *error = path + " is not JSON";
    return false;
  }
  *schema = record->value("schema", "");
  if (*schema != "minivmm.run" && *schema != "minivmm.bench") {
    *error = path + " is neither a run nor a bench record (schema \"" + *schema + "\")";
    return false;
  }
  return true;
}

}  // namespace minivmm::cli
