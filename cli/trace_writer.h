// --trace: every exit of a run, streamed to a file as it happens. Only built
// when asked for; the run loop's observer hook costs one branch otherwise.
// With several vCPUs, Write is called from each vCPU's thread but never from
// two at once (Vm::SetExitObserver), so the writer takes no lock.
//
// Formats (docs/trace.md):
//   jsonl     one JSON line per exit (sequence, reason, port or address,
//             hypercall name, arguments, result, time)
//   perfetto  Trace Event Format JSON, as chrome://tracing and
//             ui.perfetto.dev open it: one track per vCPU, each exit a
//             complete slice from the exit to the re-entry, each guest
//             report an instant marker
#ifndef MINIVMM_CLI_TRACE_WRITER_H_
#define MINIVMM_CLI_TRACE_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "cli/output_file.h"
#include "minivmm/exit_sites.h"
#include "minivmm/vm.h"
#include "nlohmann/json.hpp"

namespace minivmm::cli {

enum class TraceFormat { kJsonl, kPerfetto };

class PerfettoOut;  // trace_writer.cc
class SiteNames;    // cli/site_names.h

// The jsonl trace's last line, and how a reader tells a whole trace from
// one cut short (docs/trace.md): {"trace_end":true,"exits":N,
// "stop_reason":...,"detail":...}. A file without it was cut.
inline constexpr char kTraceEndKey[] = "trace_end";
// An exit as KVM's tracepoint saw it (`--kernel-exits`): {"kernel_exit":true,
// "reason":"cpuid","rip":"0x...","to_vmm":false,"vcpu":0,"t_ns":...}.
inline constexpr char kKernelExitKey[] = "kernel_exit";

class TraceWriter {
 public:
  // Writes into `out` (created before the run); `process_name` names the
  // VM's process track ("minivmm: ctx,tasks=2"). With `sites_elf` (a run
  // that records sites), each exit carries its site named from that ELF
  // (docs/trace.md); empty: no sites.
  TraceWriter(std::unique_ptr<OutputFile> out, TraceFormat format, const std::string& process_name,
              const std::string& sites_elf = "");
  // Without Commit, the file is abandoned: nothing under its name.
  ~TraceWriter();

  void Write(const ExitEvent& event);
  // After the run, before Commit: the run's exits as KVM's tracepoint saw
  // them (RunResult::kernel_exit_events, `--kernel-exits`), one line or
  // instant marker each, `kernel_exit` (docs/trace.md).
  void WriteKernelExits(const RunResult& result);
  // Ends and commits the file: for jsonl the trace_end line, for perfetto a
  // final "stop" marker with `stop_reason` and `detail` and the closing
  // brackets. Returns OutputFile::Commit's error. Call once.
  absl::Status Commit(const std::string& stop_reason, const std::string& detail);

 private:
  std::unique_ptr<OutputFile> out_;
  TraceFormat format_;
  int64_t base_ns_;                        // the steady clock when the file was opened: ts 0
  std::unique_ptr<PerfettoOut> perfetto_;  // null for jsonl
  std::unique_ptr<SiteNames> site_names_;  // null: no sites
  // Each distinct site's `site` value, named once.
  absl::flat_hash_map<ExitSite, nlohmann::json> sites_;
  uint64_t exits_ = 0;
  uint64_t kernel_exits_ = 0;
  bool finished_ = false;
};

struct ConvertedTrace {
  uint64_t exits = 0;
  uint64_t kernel_exits = 0;  // kernel_exit lines
  bool complete = false;      // the input ended with its trace_end line
};

// Converts a saved --trace jsonl file to the perfetto format into `out`
// (not committed: the caller does). Lines without times (written before
// they were recorded) are laid out one microsecond apart in sequence order.
// The input's trace_end line becomes the stop marker; without one the
// timeline ends with "stop: trace cut short". InvalidArgument for a line
// that is not a trace line, NotFound for an unreadable input.
absl::StatusOr<ConvertedTrace> ConvertJsonlTrace(const std::string& in_path, OutputFile& out,
                                                 const std::string& process_name);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_TRACE_WRITER_H_
