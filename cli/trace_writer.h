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

#include "absl/status/statusor.h"
#include "minivmm/vm.h"
#include "nlohmann/json.hpp"

namespace minivmm::cli {

enum class TraceFormat { kJsonl, kPerfetto };

class PerfettoOut;  // trace_writer.cc

// "jsonl", "perfetto".
std::string_view TraceFormatName(TraceFormat format);

class TraceWriter {
 public:
  // `process_name` names the VM's process track ("minivmm: ctx,tasks=2").
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Open(const std::string& path,
                                                           TraceFormat format,
                                                           const std::string& process_name);
  // Finishes the file (Finish() without a stop) if Finish was not called.
  ~TraceWriter();

  void Write(const ExitEvent& event);
  // Ends the file: for perfetto a final "stop" marker with `stop_reason`
  // and `detail` (when not empty) and the closing brackets. Idempotent.
  void Finish(const std::string& stop_reason = "", const std::string& detail = "");

 private:
  TraceWriter(FILE* file, TraceFormat format, const std::string& process_name);

  FILE* file_;
  TraceFormat format_;
  int64_t base_ns_;                        // the steady clock when the file was opened: ts 0
  std::unique_ptr<PerfettoOut> perfetto_;  // null for jsonl
  bool finished_ = false;
};

// Converts a saved --trace jsonl file to the perfetto format. Lines without
// times (written before they were recorded) are laid out one microsecond
// apart in sequence order. Returns the number of exits converted.
absl::StatusOr<uint64_t> ConvertJsonlTrace(const std::string& in_path, const std::string& out_path,
                                           const std::string& process_name);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_TRACE_WRITER_H_
