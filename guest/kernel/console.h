// The guest console. backend=pv: one console_io hypercall per line (bytes
// are buffered until '\n'); backend=native: the COM1 UART, exactly two port
// exits per byte under minivmm (one LSR read, one THR write).
#ifndef GUEST_KERNEL_CONSOLE_H_
#define GUEST_KERNEL_CONSOLE_H_

#include <stdint.h>

#include "lib/format.h"

namespace guest {

enum class ConsoleKind : uint8_t { kPv, kUart };
void ConsoleInit(ConsoleKind kind);

// Writes `s`; under pv a line goes out when its '\n' arrives (or the line
// buffer fills).
void ConsoleWrite(StrView s);

// Lines and bytes handed to the console device since boot (console.lines
// counts console_io calls under pv, newlines under native).
struct ConsoleStats {
  uint64_t calls;
  uint64_t bytes;
};
ConsoleStats GetConsoleStats();

// Prints "guest: <msg>\n" as one line.
void ConsoleLine(StrView msg);

}  // namespace guest

#endif  // GUEST_KERNEL_CONSOLE_H_
