// --trace: one JSON line per exit (sequence, reason, port or address,
// hypercall name, arguments, result). Only built when asked for; the run
// loop's observer hook costs one branch otherwise.
#ifndef MINIVMM_VMM_CLI_TRACE_WRITER_H_
#define MINIVMM_VMM_CLI_TRACE_WRITER_H_

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "vmm/vm.h"

namespace minivmm::cli {

class TraceWriter {
 public:
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Open(const std::string& path);
  ~TraceWriter();
  void Write(const ExitEvent& event);

 private:
  explicit TraceWriter(FILE* file) : file_(file) {}
  FILE* file_;
};

}  // namespace minivmm::cli

#endif  // MINIVMM_VMM_CLI_TRACE_WRITER_H_
