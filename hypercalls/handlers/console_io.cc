// console_io(cmd, count, gpa): write `count` guest bytes to the console.
// Order: cmd == MVMM_CONSOLEIO_WRITE (-EINVAL), count <= MVMM_CONSOLEIO_MAX_BYTES
// (-E2BIG), [gpa, gpa + count) inside RAM (-EFAULT). Returns count. With no
// console sink the bytes are dropped but the call still succeeds, so a guest
// behaves the same whether or not anyone listens.
#include <array>
#include <span>
#include <string_view>

#include "hypercalls/handlers/args.h"
#include "hypercalls/handlers/handlers.h"

namespace minivmm::hc {

namespace {

// The copy and the sink, once the call is known to be valid. A bounded
// stack buffer: no allocation, and the guest cannot change the bytes between
// our copy and the sink. Kept out of console_io (a tail call) so that a call
// that writes nothing does not pay for the buffer's frame.
[[gnu::noinline]] HypercallResult CopyToConsole(const HypercallEnv& env, GuestAddress gpa,
                                                uint64_t count) {
  std::array<char, MVMM_CONSOLEIO_MAX_BYTES> buffer;
  const std::span<char> text(buffer.data(), count);
  if (!env.memory.Read(gpa, text)) return Refuse(MVMM_EFAULT, "buffer outside RAM");
  if (env.console != nullptr) env.console->Write(std::string_view(text.data(), text.size()));
  return Done(count);
}

}  // namespace

HypercallResult console_io(HypercallEnv& env, const HypercallArgs& raw) {
  const auto args = ReadArgs<MVMM_HC_console_io>(raw);
  if (args.cmd != MVMM_CONSOLEIO_WRITE) return Refuse(MVMM_EINVAL, "unknown cmd");
  if (args.count > MVMM_CONSOLEIO_MAX_BYTES) {
    return Refuse(MVMM_E2BIG, "count above MVMM_CONSOLEIO_MAX_BYTES");
  }
  if (!env.memory.Contains(args.buffer, args.count)) {
    return Refuse(MVMM_EFAULT, "buffer outside RAM");
  }
  if (args.count == 0) return Done(0);
  return CopyToConsole(env, args.buffer, args.count);
}

}  // namespace minivmm::hc
