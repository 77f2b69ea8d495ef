#include "cli/probe_cache.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <system_error>

#include "absl/time/time.h"
#include "cli/file_digest.h"
#include "cli/output_file.h"
#include "cli/run_record.h"
#include "fmt/format.h"
#include "minivmm/vm_config.h"

namespace minivmm::cli {
namespace {

using nlohmann::json;

constexpr int kCacheVersion = 1;

std::string ReadSmallFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

json Tristate(const std::optional<bool>& v) { return v ? json(*v) : json(nullptr); }

bool ReadTristate(const json& j, const char* key, ProbedBehaviour* out) {
  if (!j.contains(key) || !j.contains("evidence") || !j["evidence"].is_object()) return false;
  const json& v = j[key];
  const json& e = j["evidence"];
  if (!e.contains(key) || !e[key].is_string()) return false;
  if (v.is_boolean()) {
    out->value = v.get<bool>();
  } else if (v.is_null()) {
    out->value.reset();
  } else {
    return false;
  }
  out->evidence = e[key].get<std::string>();
  return true;
}

std::string CacheFile(const std::string& dir, const std::string& key) {
  return fmt::format("{}/host-probe-{:016x}.json", dir, std::hash<std::string>{}(key));
}

}  // namespace

std::string ProbeCacheDir() {
  if (const char* d = std::getenv("MINIVMM_CACHE_DIR"); d != nullptr && *d != '\0') return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/minivmm";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0')
    return std::string(h) + "/.cache/minivmm";
  return "";
}

std::string ProbeCacheKey(const HostInfo& host, const std::string& kernel) {
  const std::string boot = ReadSmallFile("/proc/sys/kernel/random/boot_id");
  if (boot.empty()) return "";
  std::string key = "boot_id=" + boot + "\n";
  key += "kvm_module=" + host.kvm_module + "\n";
  key += "host_kernel=" + host.host_kernel + "\n";
  for (const auto& [name, value] : host.kvm_parameters) key += name + "=" + value + "\n";
  key += std::string("minivmm=") + MINIVMM_VERSION + "\n";
  key += "probe_guest=" + FileSha256(kernel.empty() ? DefaultGuestKernelPath() : kernel) + "\n";
  return key;
}

json BehaviourToJson(const HostBehaviour& b) {
  return {{"ring0_emulated", Tristate(b.ring0_emulated.value)},
          {"ring3_nm", Tristate(b.ring3_nm.value)},
          {"vmcall_in_kernel", Tristate(b.vmcall_in_kernel.value)},
          {"evidence",
           {{"ring0_emulated", b.ring0_emulated.evidence},
            {"ring3_nm", b.ring3_nm.evidence},
            {"vmcall_in_kernel", b.vmcall_in_kernel.evidence}}},
          {"loop_insns", b.loop_insns},
          {"insn_emulation", b.insn_emulation ? json(*b.insn_emulation) : json(nullptr)},
          {"vmcall_rax", b.vmcall_rax ? json(*b.vmcall_rax) : json(nullptr)},
          {"vmcall_wait_ns", absl::ToInt64Nanoseconds(b.vmcall_wait)},
          {"elapsed_ns", absl::ToInt64Nanoseconds(b.elapsed)},
          {"runs", b.runs}};
}

std::optional<HostBehaviour> BehaviourFromJson(const json& j) {
  if (!j.is_object()) return std::nullopt;
  HostBehaviour b;
  if (!ReadTristate(j, "ring0_emulated", &b.ring0_emulated) ||
      !ReadTristate(j, "ring3_nm", &b.ring3_nm) ||
      !ReadTristate(j, "vmcall_in_kernel", &b.vmcall_in_kernel))
    return std::nullopt;
  auto u64 = [&](const char* k) { return j.contains(k) && j[k].is_number_unsigned(); };
  auto i64 = [&](const char* k) { return j.contains(k) && j[k].is_number_integer(); };
  if (!u64("loop_insns") || !i64("vmcall_wait_ns") || !i64("elapsed_ns") || !i64("runs"))
    return std::nullopt;
  b.loop_insns = j["loop_insns"].get<uint64_t>();
  b.vmcall_wait = absl::Nanoseconds(j["vmcall_wait_ns"].get<int64_t>());
  b.elapsed = absl::Nanoseconds(j["elapsed_ns"].get<int64_t>());
  b.runs = j["runs"].get<int>();
  if (!j.contains("insn_emulation") || !j.contains("vmcall_rax")) return std::nullopt;
  if (u64("insn_emulation")) {
    b.insn_emulation = j["insn_emulation"].get<uint64_t>();
  } else if (!j["insn_emulation"].is_null()) {
    return std::nullopt;
  }
  if (i64("vmcall_rax")) {
    b.vmcall_rax = j["vmcall_rax"].get<int64_t>();
  } else if (!j["vmcall_rax"].is_null()) {
    return std::nullopt;
  }
  return b;
}

std::string CacheFileText(const std::string& key, const HostBehaviour& b) {
  return json{{"version", kCacheVersion}, {"key", key}, {"behaviour", BehaviourToJson(b)}}.dump(2) +
         "\n";
}

std::optional<HostBehaviour> ReadCachedBehaviour(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  const json saved = in ? json::parse(in, nullptr, /*allow_exceptions=*/false) : json();
  if (!saved.is_object() || saved.value("version", 0) != kCacheVersion ||
      saved.value("key", std::string()) != key || !saved.contains("behaviour"))
    return std::nullopt;
  return BehaviourFromJson(saved["behaviour"]);
}

void CachedProbeBehaviourInto(HostInfo& host, const std::string& kvm_device, bool reprobe,
                              const std::string& kernel) {
  const std::string dir = ProbeCacheDir();
  const std::string key = dir.empty() ? "" : ProbeCacheKey(host, kernel);
  const std::string file = key.empty() ? "" : CacheFile(dir, key);
  if (!file.empty() && !reprobe) {
    if (std::optional<HostBehaviour> b = ReadCachedBehaviour(file, key)) {
      host.behaviour = *std::move(b);
      host.behaviour->cached = true;
      return;
    }
  }
  ProbeBehaviourInto(host, kvm_device, kernel);
  const HostBehaviour& b = *host.behaviour;
  // Only a probe that decided everything is kept: one that could not (a
  // busy machine, a failed run) is tried again next time.
  if (file.empty() || !b.ring0_emulated.measured() || !b.ring3_nm.measured() ||
      !b.vmcall_in_kernel.measured())
    return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  absl::StatusOr<std::unique_ptr<OutputFile>> out = OutputFile::Create(file, "probe cache");
  if (!out.ok()) return;
  (*out)->Write(CacheFileText(key, b));
  (void)(*out)->Commit();
}

}  // namespace minivmm::cli
