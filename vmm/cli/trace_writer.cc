#include "vmm/cli/trace_writer.h"

#include <errno.h>
#include <string.h>

#include "absl/strings/str_format.h"
#include "minivmm_abi/hypercall.h"
#include "nlohmann/json.hpp"

namespace minivmm::cli {
namespace {

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

}  // namespace

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Open(const std::string& path) {
  FILE* f = fopen(path.c_str(), "w");
  if (f == nullptr)
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot open trace file %s: %s", path, strerror(errno)));
  return std::unique_ptr<TraceWriter>(new TraceWriter(f));
}

TraceWriter::~TraceWriter() { fclose(file_); }

void TraceWriter::Write(const ExitEvent& e) {
  nlohmann::json line = {{"seq", e.sequence}, {"reason", std::string(ExitReasonName(e.reason))}};
  if (e.reason == ExitReason::kIo) line["port"] = e.address;
  if (e.reason == ExitReason::kMmio) line["address"] = e.address;
  if (e.reason == ExitReason::kIo || e.reason == ExitReason::kMmio) line["write"] = e.is_write;
  if (e.hypercall >= 0) {
    line["hypercall"] = HypercallName(e.hypercall);
    line["args"] = e.args;
    line["result"] = e.result;
  }
  std::string text = line.dump();
  text.push_back('\n');
  fwrite(text.data(), 1, text.size(), file_);
}

}  // namespace minivmm::cli
