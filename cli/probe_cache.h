// The host probe (ProbeHostBehaviour: short guest runs that measure how the
// host's KVM behaves) once per host, not once per record: its answers are
// kept under the user's cache directory, keyed by everything that could
// change them, and reused by `run --json` and `bench` (docs/run-record.md
// "The host probe and its cache").
//
// The key: the host's boot (/proc/sys/kernel/random/boot_id), the KVM
// module behind the device and the parameters of it and of kvm
// (/sys/module/<module>/parameters/*), minivmm's version and the digest of
// the probe's guest image. Any change is a miss, and so is an unreadable,
// foreign or malformed cache file (it is then probed again and rewritten).
#ifndef MINIVMM_CLI_PROBE_CACHE_H_
#define MINIVMM_CLI_PROBE_CACHE_H_

#include <optional>
#include <string>

#include "minivmm/host_info.h"
#include "nlohmann/json.hpp"

namespace minivmm::cli {

// The cache directory: $MINIVMM_CACHE_DIR, else $XDG_CACHE_HOME/minivmm,
// else $HOME/.cache/minivmm; empty when none can be named (then every probe
// runs and nothing is kept).
std::string ProbeCacheDir();

// What decides whether a cached probe still holds for `host` with the probe
// guest `kernel` (empty: the built-in one), one line per input. Empty when
// the host's boot cannot be read: nothing is cached then.
std::string ProbeCacheKey(const HostInfo& host, const std::string& kernel = "");

// HostBehaviour as it is kept, and back; FromJson gives nullopt for anything
// malformed.
nlohmann::json BehaviourToJson(const HostBehaviour& b);
std::optional<HostBehaviour> BehaviourFromJson(const nlohmann::json& j);

// A cache file's text: the behaviour `b` measured under `key`.
std::string CacheFileText(const std::string& key, const HostBehaviour& b);
// The behaviour a cache file keeps for `key`; nullopt when the file is
// missing or unreadable, not JSON, of another cache version or key, or
// holds a malformed behaviour (each a miss: probed again, rewritten).
std::optional<HostBehaviour> ReadCachedBehaviour(const std::string& file, const std::string& key);

// Fills host.behaviour: from the cache when it holds an entry for this
// key and `reprobe` is false (HostBehaviour::cached is then true), else by
// probing (ProbeBehaviourInto, with the probe guest `kernel`, empty: the
// built-in one), and then stores a probe that measured all three answers
// for the next run. A cache that cannot be written is not an error (the
// record says the probe was not cached).
void CachedProbeBehaviourInto(HostInfo& host, const std::string& kvm_device, bool reprobe,
                              const std::string& kernel = "");

}  // namespace minivmm::cli

#endif  // MINIVMM_CLI_PROBE_CACHE_H_
