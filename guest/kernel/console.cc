#include "kernel/console.h"

#include "arch/cpu.h"
#include "kernel/hypercall.h"
#include "minivmm_abi/boot.h"

namespace guest {
namespace {

constexpr uint16_t kUartThr = MVMM_COM1_PORT;
constexpr uint16_t kUartLsr = MVMM_COM1_PORT + 5;
constexpr uint8_t kLsrThrEmpty = 1u << 5;

ConsoleKind g_kind = ConsoleKind::kPv;
char g_line[256];
size_t g_line_len = 0;
ConsoleStats g_stats;

void FlushLine() {
  if (g_line_len == 0) return;
  ++g_stats.calls;
  g_stats.bytes += g_line_len;
  // The line buffer is identity mapped, so its address is its gpa.
  Hypercall(MVMM_HC_console_io, MVMM_CONSOLEIO_WRITE, g_line_len,
            reinterpret_cast<uintptr_t>(g_line));
  g_line_len = 0;
}

void UartPut(char c) {
  // Read LSR once per byte and wait for THR empty; minivmm always reports
  // it empty, so a byte costs exactly two port exits there.
  while ((cpu::Inb(kUartLsr) & kLsrThrEmpty) == 0) cpu::Pause();
  cpu::Outb(kUartThr, static_cast<uint8_t>(c));
  ++g_stats.bytes;
  if (c == '\n') ++g_stats.calls;
}

}  // namespace

void ConsoleInit(ConsoleKind kind) { g_kind = kind; }

void ConsoleWrite(StrView s) {
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (g_kind == ConsoleKind::kUart) {
      UartPut(c);
      continue;
    }
    g_line[g_line_len++] = c;
    if (c == '\n' || g_line_len == sizeof(g_line)) FlushLine();
  }
}

ConsoleStats GetConsoleStats() { return g_stats; }

void ConsoleLine(StrView msg) {
  char storage[256];
  TextBuf line(storage, sizeof(storage));
  line.Str("guest: ").Str(msg);
  // Keep the newline even when the message is too long for one line.
  StrView body = line.View();
  if (body.size() == sizeof(storage)) body = body.Sub(0, sizeof(storage) - 1);
  ConsoleWrite(body);
  ConsoleWrite("\n");
}

}  // namespace guest
