// Exit sites named from the guest ELF (docs/sites.md): what the run
// record's `sites` section (cli/sites_record.h) and the trace's per-exit
// `site` (cli/trace_writer.h) both say of a stack.
#ifndef MINIVMM_CLI_SITE_NAMES_H_
#define MINIVMM_CLI_SITE_NAMES_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "minivmm/exit_sites.h"
#include "minivmm/symbolizer.h"
#include "nlohmann/json.hpp"

namespace minivmm::cli {

// Names guest code addresses from the ELF at `kernel_path`, each address
// once. An ELF that cannot be read names nothing (error() says why).
class SiteNames {
 public:
  explicit SiteNames(const std::string& kernel_path);
  const std::string& error() const { return error_; }

  // The source frames at `pc`, innermost first; a return address is looked
  // up one byte back, in its call.
  const std::vector<SourceFrame>& At(uint64_t pc, bool return_address);

 private:
  std::unique_ptr<Symbolizer> symbolizer_;
  std::string error_;
  absl::flat_hash_map<uint64_t, std::vector<SourceFrame>> cache_;
};

// A cause as the record's sites and timeline name it: its name, "none" for
// Cause::kCount (an exit of no cause).
std::string CauseKey(Cause cause);
inline std::string SiteCauseName(const ExitSite& site) { return CauseKey(site.cause); }

// The record's frames at one code address `pc`: innermost first, each
// inlined call its own {"pc", "function", "file", "line", "inlined"}.
nlohmann::json FramesAt(uint64_t pc, bool return_address, SiteNames& names);

// The record's `frames` of a stack (the RIP, then return addresses):
// FramesAt of each address.
nlohmann::json StackFrames(std::span<const uint64_t> stack, SiteNames& names);
// The record's `frames` of a site: StackFrames of its stack.
nlohmann::json SiteFrames(const ExitSite& site, SiteNames& names);

// A frame as folded stacks and the trace's `stack` name it: its function,
// else its raw address.
std::string FrameName(const nlohmann::json& frame);

// One exit's site as the trace's `site` and Python's on_exit events give it
// (docs/trace.md): its cause, RIP, the innermost source frame (function,
// file, line) and every frame's name, innermost first; `user` at CPL 3.
nlohmann::json SiteSummary(const ExitSite& site, SiteNames& names);
// Its stack's part: the innermost source frame's function, file and line,
// and `stack`, every frame's name.
nlohmann::json StackSummary(std::span<const uint64_t> stack, SiteNames& names);

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_SITE_NAMES_H_
