/* No IDT: the first fault escalates to a triple fault. */
.globl _start
_start:
  ud2
