#include "cli/trace_writer.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/report_value.h"
#include "cli/site_names.h"
#include "fmt/format.h"
#include "minivmm/exit_event.h"
#include "minivmm_abi/hypercall.h"

namespace minivmm::cli {
namespace {

using nlohmann::json;

std::string HypercallName(int64_t nr) {
  switch (nr) {
#define MVMM_TRACE_NAME_(n, name) \
  case n:                         \
    return #name;
    MVMM_HYPERCALL_LIST(MVMM_TRACE_NAME_)
#undef MVMM_TRACE_NAME_
  }
  return absl::StrFormat("nr%d", nr);
}

// Invalid UTF-8 cannot come from the guest (reports are checked), but a
// trace must never throw half-way.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// The jsonl line of one exit; times relative to `base_ns`.
json Line(const ExitEvent& e, int64_t base_ns) {
  json line = {{"seq", e.sequence}, {"reason", std::string(ExitReasonName(e.reason))}};
  if (e.reason == ExitReason::kIo) line["port"] = e.address;
  if (e.reason == ExitReason::kMmio) line["address"] = e.address;
  if (e.reason == ExitReason::kIo || e.reason == ExitReason::kMmio) line["write"] = e.is_write;
  if (e.hypercall >= 0) {
    line["hypercall"] = HypercallName(e.hypercall);
    line["args"] = e.args;
    line["result"] = e.result;
    if (!e.refusal.empty()) line["refusal"] = e.refusal;
  }
  if (!e.wasted.empty()) line["wasted"] = e.wasted;
  if (e.cancels >= 0) line["cancels"] = e.cancels;
  line["vcpu"] = e.vcpu;
  line["t_ns"] = e.exit_ns - base_ns;
  line["dur_ns"] = e.resume_ns - e.exit_ns;
  if (!e.reports.empty()) {
    json report = json::object();
    for (const auto& [key, value] : e.reports) report[key] = ReportValueJson(value);
    line["report"] = report;
  }
  return line;
}

// "report config", "report ctx", "report kernel": the prefix of the record's
// keys names it (guest/README.md "Reports"); a workload's record also holds
// check.<w>.* keys, so the first other prefix wins.
std::string ReportMarkerName(const json& report) {
  std::string name;
  for (const auto& [key, value] : report.items()) {
    std::string prefix = key.substr(0, key.find('.'));
    if (name.empty() || (name == "check" && prefix != "check")) name = prefix;
  }
  return name.empty() ? "report" : "report " + name;
}

}  // namespace

// Trace Event Format, streamed: a header, one event per line, a footer.
class PerfettoOut {
 public:
  PerfettoOut(OutputFile* file, int pid) : file_(file), pid_(pid) {}

  void Header() {
    std::string head = "{\"displayTimeUnit\":\"ns\",\"otherData\":" +
                       Dump({{"tool", "minivmm"},
                             {"tool_version", MINIVMM_VERSION},
                             {"clock", "host steady clock; ts 0 is when the trace was opened"}}) +
                       ",\"traceEvents\":[";
    file_->Write(head);
  }

  void Footer() { file_->Write("\n]}\n"); }

  void Emit(const json& event) {
    std::string text = (first_ ? "\n" : ",\n") + Dump(event);
    first_ = false;
    file_->Write(text);
  }

  void NameProcess(const std::string& name) {
    Emit({{"ph", "M"},
          {"name", "process_name"},
          {"pid", pid_},
          {"tid", 0},
          {"ts", 0},
          {"args", {{"name", name}}}});
  }

  void NameThread(uint32_t vcpu) {
    if (!named_.insert(vcpu).second) return;
    Emit({{"ph", "M"},
          {"name", "thread_name"},
          {"pid", pid_},
          {"tid", vcpu},
          {"ts", 0},
          {"args", {{"name", absl::StrFormat("vCPU %u", vcpu)}}}});
    Emit({{"ph", "M"},
          {"name", "thread_sort_index"},
          {"pid", pid_},
          {"tid", vcpu},
          {"ts", 0},
          {"args", {{"sort_index", vcpu}}}});
  }

  // One exit (a jsonl line) as a complete slice, and its report as a marker.
  void Exit(json line) {
    const uint32_t vcpu = line.value("vcpu", 0u);
    NameThread(vcpu);
    const double ts = line.value("t_ns", int64_t{0}) / 1000.0;
    const double dur = line.value("dur_ns", int64_t{0}) / 1000.0;
    json report;
    if (auto it = line.find("report"); it != line.end()) {
      report = std::move(*it);
      line.erase("report");
    }
    line.erase("t_ns");
    line.erase("dur_ns");
    line.erase("vcpu");
    std::string name = line.contains("hypercall") && line["hypercall"].is_string()
                           ? line["hypercall"].get<std::string>()
                           : line["reason"].get<std::string>();
    Emit({{"ph", "X"},
          {"cat", "exit"},
          {"name", name},
          {"pid", pid_},
          {"tid", vcpu},
          {"ts", ts},
          {"dur", dur},
          {"args", line}});
    if (report.is_object()) {
      Emit({{"ph", "i"},
            {"s", "t"},
            {"cat", "guest"},
            {"name", ReportMarkerName(report)},
            {"pid", pid_},
            {"tid", vcpu},
            {"ts", ts},
            {"args", report}});
    }
    last_us_ = ts + dur;
  }

  // One exit as KVM's tracepoint saw it (a `kernel_exit` jsonl line), an
  // instant marker on its vCPU's track.
  void KernelExit(json line) {
    const uint32_t vcpu = line.value("vcpu", 0u);
    NameThread(vcpu);
    const double ts = line.value("t_ns", int64_t{0}) / 1000.0;
    line.erase("t_ns");
    line.erase("vcpu");
    line.erase(kKernelExitKey);
    const std::string name = "kvm:" + line["reason"].get<std::string>();
    Emit({{"ph", "i"},
          {"s", "t"},
          {"cat", "kvm"},
          {"name", name},
          {"pid", pid_},
          {"tid", vcpu},
          {"ts", ts},
          {"args", line}});
    last_us_ = std::max(last_us_, ts);
  }

  // At `at_us` (when the run stopped), never before the last slice's end.
  void Stop(const std::string& reason, const std::string& detail, double at_us) {
    Emit({{"ph", "i"},
          {"s", "p"},
          {"cat", "run"},
          {"name", "stop: " + reason},
          {"pid", pid_},
          {"tid", 0},
          {"ts", std::max(last_us_, at_us)},
          {"args", {{"stop_reason", reason}, {"detail", detail}}}});
  }

 private:
  OutputFile* file_;
  int pid_;
  bool first_ = true;
  double last_us_ = 0;
  std::set<uint32_t> named_;
};

TraceWriter::TraceWriter(std::unique_ptr<OutputFile> out, TraceFormat format,
                         const std::string& process_name, const std::string& sites_elf)
    : out_(std::move(out)), format_(format), base_ns_(ExitClockNs()) {
  if (!sites_elf.empty()) site_names_ = std::make_unique<SiteNames>(sites_elf);
  if (format_ == TraceFormat::kPerfetto) {
    perfetto_ = std::make_unique<PerfettoOut>(out_.get(), static_cast<int>(getpid()));
    perfetto_->Header();
    perfetto_->NameProcess(process_name);
    perfetto_->NameThread(0);  // the track exists even when the run has no exit
  }
}

TraceWriter::~TraceWriter() = default;

void TraceWriter::Write(const ExitEvent& e) {
  if (finished_) return;
  ++exits_;
  json line = Line(e, base_ns_);
  if (e.site != nullptr && site_names_ != nullptr) {
    auto [at, inserted] = sites_.try_emplace(*e.site);
    if (inserted) at->second = SiteSummary(*e.site, *site_names_);
    line["site"] = at->second;
  }
  if (perfetto_ != nullptr) {
    perfetto_->Exit(std::move(line));
    return;
  }
  std::string text = Dump(line);
  text.push_back('\n');
  out_->Write(text);
}

void TraceWriter::WriteKernelExits(const RunResult& result) {
  if (finished_) return;
  for (const KernelExitEvent& e : result.kernel_exit_events) {
    ++kernel_exits_;
    json line = {{kKernelExitKey, true},
                 {"reason", result.kernel_exit_reasons.at(e.reason)},
                 {"rip", fmt::format("{:#x}", e.rip)},
                 {"to_vmm", e.to_vmm},
                 {"vcpu", e.vcpu},
                 {"t_ns", static_cast<int64_t>(e.time_ns) - base_ns_}};
    if (site_names_ != nullptr) {
      // Its stack (RunResult::kernel_exit_stacks), else its RIP alone.
      const uint64_t rip[] = {e.rip};
      std::span<const uint64_t> stack = rip;
      if (e.stack != 0 && e.stack <= result.kernel_exit_stack_list.size())
        stack = result.kernel_exit_stack_list[e.stack - 1];
      json site = StackSummary(stack, *site_names_);
      if (!site.empty()) line["site"] = std::move(site);
    }
    if (perfetto_ != nullptr) {
      perfetto_->KernelExit(std::move(line));
      continue;
    }
    out_->Write(Dump(line) + "\n");
  }
}

absl::Status TraceWriter::Commit(const std::string& stop_reason, const std::string& detail) {
  finished_ = true;
  if (perfetto_ != nullptr) {
    perfetto_->Stop(stop_reason, detail, static_cast<double>(ExitClockNs() - base_ns_) / 1000.0);
    perfetto_->Footer();
  } else {
    json end = {{kTraceEndKey, true}, {"exits", exits_}};
    if (kernel_exits_ != 0) end["kernel_exits"] = kernel_exits_;
    end["stop_reason"] = stop_reason;
    end["detail"] = detail;
    out_->Write(Dump(end) + "\n");
  }
  return out_->Commit();
}

absl::StatusOr<ConvertedTrace> ConvertJsonlTrace(const std::string& in_path, OutputFile& out_file,
                                                 const std::string& process_name) {
  std::ifstream in(in_path);
  if (!in) return absl::NotFoundError(absl::StrFormat("cannot read %s", in_path));
  PerfettoOut out(&out_file, 1);
  out.Header();
  out.NameProcess(process_name);
  out.NameThread(0);
  ConvertedTrace converted;
  uint64_t line_number = 0;
  for (std::string text; std::getline(in, text);) {
    ++line_number;
    if (text.empty()) continue;
    json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
    auto not_a_line = [&](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s:%d is not a minivmm trace line%s", in_path, line_number, why));
    };
    if (!converted.complete && line.is_object() && line.contains(kTraceEndKey)) {
      try {
        out.Stop(line.value("stop_reason", std::string("?")), line.value("detail", std::string()),
                 0);
      } catch (const json::exception& e) {  // a field of the wrong type
        return not_a_line(std::string(": ") + e.what());
      }
      converted.complete = true;
      continue;
    }
    if (!converted.complete && line.is_object() && line.value(kKernelExitKey, false)) {
      try {
        out.KernelExit(std::move(line));
      } catch (const json::exception& e) {  // a field of the wrong type
        return not_a_line(std::string(": ") + e.what());
      }
      ++converted.kernel_exits;
      continue;
    }
    if (converted.complete || line.is_discarded() || !line.is_object() ||
        !line.contains("reason") || !line["reason"].is_string()) {
      return not_a_line(converted.complete ? " (after the trace_end line)" : "");
    }
    if (!line.contains("t_ns")) {  // a trace from before times were recorded
      line["t_ns"] = static_cast<int64_t>(line.value("seq", converted.exits)) * 1000;
      line["dur_ns"] = 500;
    }
    try {
      out.Exit(std::move(line));
    } catch (const json::exception& e) {  // a field of the wrong type
      return not_a_line(std::string(": ") + e.what());
    }
    ++converted.exits;
  }
  if (!converted.complete) out.Stop("trace cut short", "the jsonl trace has no trace_end line", 0);
  out.Footer();
  return converted;
}

void AddTraceFlags(CLI::App& app, TraceOptions& o) {
  app.add_option("TRACE", o.input_path, "A trace written by run --trace (jsonl)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("-o,--output", o.output_path, "The timeline (Trace Event Format JSON)")
      ->required();
}

int TraceCommand(const TraceOptions& o) {
  absl::StatusOr<std::unique_ptr<OutputFile>> out = OutputFile::Create(o.output_path, "timeline");
  if (!out.ok()) {
    fmt::print(stderr, "minivmm trace: {}\n", std::string(out.status().message()));
    return kExitUsage;
  }
  std::string name = o.input_path.substr(o.input_path.find_last_of('/') + 1);
  absl::StatusOr<ConvertedTrace> converted =
      ConvertJsonlTrace(o.input_path, **out, "minivmm: " + name);
  absl::Status status = converted.ok() ? (*out)->Commit() : converted.status();
  if (!status.ok()) {
    fmt::print(stderr, "minivmm trace: {}\n", std::string(status.message()));
    // Not a trace: as a usage error; unreadable or unwritable files: 125.
    return absl::IsInvalidArgument(status) ? kExitUsage : kExitVmmError;
  }
  const std::string kernel =
      converted->kernel_exits == 0
          ? ""
          : fmt::format(", {} as KVM's tracepoint saw them", converted->kernel_exits);
  fmt::print(stderr, "minivmm trace: wrote {} ({} exits{}{})\n", o.output_path, converted->exits,
             kernel, converted->complete ? "" : "; the trace was cut short: no trace_end line");
  return 0;
}

}  // namespace minivmm::cli
