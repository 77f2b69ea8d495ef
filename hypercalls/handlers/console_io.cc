// console_io(cmd, count, gpa): write `count` guest bytes to the console.
// Order: cmd == MVMM_CONSOLEIO_WRITE (-EINVAL), count <= MVMM_CONSOLEIO_MAX_BYTES
// (-E2BIG), [gpa, gpa + count) inside RAM (-EFAULT). Returns count. With no
// console sink the bytes are dropped but the call still succeeds, so a guest
// behaves the same whether or not anyone listens.
#include <array>
#include <string_view>

#include "absl/strings/str_format.h"
#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"
#include "vmm/internal/status_macros.h"

namespace minivmm::hc {

absl::StatusOr<uint64_t> console_io(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ConsoleIoArgs::From(raw);
  if (args.cmd != MVMM_CONSOLEIO_WRITE) {
    return absl::InvalidArgumentError(absl::StrFormat("console_io: unknown cmd %d", args.cmd));
  }
  if (args.count > MVMM_CONSOLEIO_MAX_BYTES) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("console_io: %d bytes is above %d", args.count, MVMM_CONSOLEIO_MAX_BYTES));
  }
  // A bounded stack buffer: no allocation, and the guest cannot change the
  // bytes between our copy and the sink.
  std::array<uint8_t, MVMM_CONSOLEIO_MAX_BYTES> buffer;
  const std::span<uint8_t> bytes(buffer.data(), args.count);
  RETURN_IF_ERROR(env.memory.Read(args.buffer, bytes));
  if (env.console != nullptr && !bytes.empty()) {
    env.console->Write(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  }
  return args.count;
}

}  // namespace minivmm::hc
