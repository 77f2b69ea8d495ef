/* The PC guests' entry: the Multiboot-1 header, a stack, our own flat GDT
   (code 0x08, data 0x10; the APs' trampoline loads it too), then
   guest_main(magic, mbi). The entry state is saved before anything changes
   it (pc_entry prints it). */
#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 0x3 /* modules page-aligned; memory information */

  .section .multiboot, "a"
  .align 4
  .long MB_MAGIC
  .long MB_FLAGS
  .long -(MB_MAGIC + MB_FLAGS)

  .text
  .code32
  .globl _start
_start:
  movl %eax, entry_eax
  movl %ebx, entry_ebx
  movl $boot_stack_top, %esp
  pushfl
  popl entry_eflags
  movl %cr0, %ecx
  movl %ecx, entry_cr0
  lgdt gdt_descriptor
  ljmp $0x08, $1f
1:
  movw $0x10, %cx
  movw %cx, %ds
  movw %cx, %es
  movw %cx, %ss
  movw %cx, %fs
  movw %cx, %gs
  xorl %ebp, %ebp  /* the bottom of the frame chain (docs/sites.md) */
  pushl %ebx
  pushl %eax
  call guest_main
  pushl $1
  call guest_exit

  .data
  .globl entry_eax, entry_ebx, entry_cr0, entry_eflags
entry_eax: .long 0
entry_ebx: .long 0
entry_cr0: .long 0
entry_eflags: .long 0

  .align 8
  .globl gdt, gdt_end
gdt:
  .quad 0
  .quad 0x00CF9A000000FFFF /* 0x08: code, flat 4 GiB, 32-bit */
  .quad 0x00CF92000000FFFF /* 0x10: data, flat 4 GiB */
gdt_end:
  .globl gdt_descriptor
gdt_descriptor:
  .word gdt_end - gdt - 1
  .long gdt

  .bss
  .align 16
  .space 16384
boot_stack_top:

  .section .note.GNU-stack, "", @progbits
