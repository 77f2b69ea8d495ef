/* SSE arithmetic in ring 0: an emulation failure on software KVM hosts, an
 * ordinary instruction on hardware. On hardware the guest then shuts down
 * with 0, so tests accept either outcome per host kind. */
#include "tiny.h"
.globl _start
_start:
  popcnt %rbx, %rax
  SHUTDOWN(0)
