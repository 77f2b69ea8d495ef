// Guest code addresses to functions and source lines, from the guest ELF's
// DWARF (through elfutils' libdw, as perf does) or, without DWARF, its symbol
// table (docs/sites.md). Part of the public API (docs/API.md) in a library
// of its own, minivmm::symbolizer, outside the VMM: the CLI links it to name
// the exit sites after the run. The ELF is
// untrusted input: a malformed file gives an error from Open or addresses it
// cannot name, never a crash or a hang on our side.
#ifndef MINIVMM_SYMBOLIZER_H_
#define MINIVMM_SYMBOLIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace minivmm {

// One source-level frame at an address.
struct SourceFrame {
  std::string function;  // "" when nothing names the address
  std::string file;      // "" when no line table covers it
  int line = 0;          // 0 when unknown
  bool inlined = false;  // inlined into the next frame of the same address
};

class Symbolizer {
 public:
  virtual ~Symbolizer() = default;

  // Opens the ELF at `path` (kept open until destruction). NotFound or
  // InvalidArgument when it cannot be read as an ELF; a stripped ELF opens
  // and names nothing.
  static absl::StatusOr<std::unique_ptr<Symbolizer>> Open(const std::string& path);

  // The frames at code address `pc`, innermost first: the inlined calls
  // (each with the line it is at) then the function that holds them. One
  // frame with an empty function when nothing names `pc`. For a return
  // address pass the address minus one, so that the line is the call's.
  virtual std::vector<SourceFrame> Lookup(uint64_t pc) const = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_SYMBOLIZER_H_
