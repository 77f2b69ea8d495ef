/* COUNT console_io(write, 0 bytes) hypercalls, then shutdown(0). The
 * cheapest real hypercall: the bench's null round trip. The loop counter is
 * R12; nothing else is touched. */
#include "tiny.h"
.globl _start
_start:
  mov $COUNT, %r12d
1:
  xor %edi, %edi
  xor %esi, %esi
  xor %edx, %edx
  HYPERCALL(18)
  dec %r12d
  jnz 1b
  SHUTDOWN(0)
