#include "cli/guest_cmdline.h"

#include "lib/cmdline.h"
#include "lib/format.h"

namespace minivmm::cli {

absl::Status CheckGuestCommandLine(const std::string& cmdline) {
  // As guest/kernel/main.cc's ParseConfig: the same buffer, so the same
  // (possibly truncated) line.
  char storage[200];
  guest::TextBuf error(storage, sizeof(storage));
  guest::Config config;
  if (guest::ParseCmdline(guest::StrView(cmdline.data(), cmdline.size()), &config, &error))
    return absl::OkStatus();
  const guest::StrView line = error.View();
  return absl::InvalidArgumentError(std::string(line.data(), line.size()));
}

}  // namespace minivmm::cli
