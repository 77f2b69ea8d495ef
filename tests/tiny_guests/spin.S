/* Spins forever with interrupts off and never exits: only --timeout stops it. */
.globl _start
_start:
  cli
1:
  jmp 1b
