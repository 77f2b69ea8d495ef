/* COUNT fpu_taskswitch hypercalls alternating set=1 and set=0, so that every
 * one changes CR0.TS and the VMM must write the synced sregs back: the cost
 * of an sregs change, against null_hypercalls.S. */
#include "tiny.h"
.globl _start
_start:
  mov $COUNT, %r12d
1:
  mov %r12d, %edi
  and $1, %edi
  HYPERCALL(5)
  dec %r12d
  jnz 1b
  SHUTDOWN(0)
