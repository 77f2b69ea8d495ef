/* Stores into the read-only GDT page (0xC0000000), good and bad, then a
 * segment load from the TLS slot it filled, then shutdown(0).
 *   1 applied: TLS slot 7, a present DPL-3 data segment (accessed bit clear:
 *     the VMM sets it)
 *   4 rejected: misaligned, 4-byte, slot 1 (kernel code), slot 8 with a DPL-0
 *     descriptor */
#include "tiny.h"
.globl _start
_start:
  mov $0xC0000000, %rbx
  movabs $0x00cff2000000ffff, %rax   /* data, DPL 3, present, accessed clear */
  mov %rax, 7*8(%rbx)
  mov %rax, 7*8+1(%rbx)              /* misaligned */
  movl %eax, 8*8(%rbx)               /* 4 bytes */
  mov %rax, 1*8(%rbx)                /* reserved slot */
  movabs $0x00cf92000000ffff, %rax   /* DPL 0 */
  mov %rax, 8*8(%rbx)
  mov $0x3b, %ax                     /* selector of slot 7, RPL 3 */
  mov %ax, %fs                       /* loads only if the accessed bit was set */
  SHUTDOWN(0)
