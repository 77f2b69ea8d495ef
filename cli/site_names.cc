#include "cli/site_names.h"

#include "absl/strings/str_replace.h"
#include "fmt/format.h"

namespace minivmm::cli {

using json = nlohmann::json;

SiteNames::SiteNames(const std::string& kernel_path) {
  absl::StatusOr<std::unique_ptr<Symbolizer>> s = Symbolizer::Open(kernel_path);
  if (s.ok()) {
    symbolizer_ = *std::move(s);
  } else {
    error_ = std::string(s.status().message());
  }
}

const std::vector<SourceFrame>& SiteNames::At(uint64_t pc, bool return_address) {
  const uint64_t key = return_address ? pc - 1 : pc;
  auto [it, inserted] = cache_.try_emplace(key);
  if (inserted)
    it->second =
        symbolizer_ != nullptr ? symbolizer_->Lookup(key) : std::vector<SourceFrame>{SourceFrame{}};
  return it->second;
}

std::string CauseKey(Cause cause) {
  return cause == Cause::kCount ? "none" : std::string(CauseName(cause));
}

json FramesAt(uint64_t pc, bool return_address, SiteNames& names) {
  json frames = json::array();
  for (const SourceFrame& f : names.At(pc, return_address)) {
    json one = {{"pc", fmt::format("{:#x}", pc)}, {"function", f.function}};
    if (!f.file.empty()) one["file"] = f.file;
    if (f.line != 0) one["line"] = f.line;
    if (f.inlined) one["inlined"] = true;
    frames.push_back(std::move(one));
  }
  return frames;
}

json StackFrames(std::span<const uint64_t> stack, SiteNames& names) {
  json frames = json::array();
  for (size_t i = 0; i < stack.size(); ++i) {
    for (json& one : FramesAt(stack[i], i > 0, names)) frames.push_back(std::move(one));
  }
  return frames;
}

json SiteFrames(const ExitSite& site, SiteNames& names) { return StackFrames(site.stack(), names); }

std::string FrameName(const json& frame) {
  std::string name = frame.value("function", "");
  if (name.empty()) name = frame.value("pc", "?");
  return absl::StrReplaceAll(name, {{";", ":"}, {"\n", " "}});
}

json SiteSummary(const ExitSite& site, SiteNames& names) {
  json line = {{"cause", SiteCauseName(site)}, {"rip", fmt::format("{:#x}", site.frames[0])}};
  line.update(StackSummary(site.stack(), names));
  if (site.user) line["user"] = true;
  return line;
}

json StackSummary(std::span<const uint64_t> stack, SiteNames& names) {
  const json frames = StackFrames(stack, names);
  json line = json::object();
  if (!frames.empty()) {
    const json& leaf = frames.front();
    line["function"] = leaf["function"];
    if (leaf.contains("file")) line["file"] = leaf["file"];
    if (leaf.contains("line")) line["line"] = leaf["line"];
  }
  json names_of = json::array();
  for (const json& frame : frames) names_of.push_back(FrameName(frame));
  line["stack"] = std::move(names_of);
  return line;
}

}  // namespace minivmm::cli
