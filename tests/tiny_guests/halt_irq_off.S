/* hlt with IF=0: nothing can ever wake this vCPU. */
.globl _start
_start:
  cli
  hlt
  jmp _start
