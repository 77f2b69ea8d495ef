/* pc_bios's assembly: a round trip to real mode, copied to BIOS_TRIP_BASE
   and called there from 32-bit protected mode with interrupts off. In real
   mode, on the vector table at 0, it waits with sti; hlt: only an interrupt
   through that table, whose handler returns with iret, brings it back. Then
   it goes back to protected mode on the caller's GDT, IDT and stack. Every
   address is the copy's (TRIP), so the code runs below 64 KiB. */
#define BIOS_TRIP_BASE 0x7000
#define TRIP(x) (BIOS_TRIP_BASE + (x) - bios_trip_start)

  .text
  .code32
  .globl bios_trip_start, bios_trip_end
bios_trip_start:
  pushal
  movl %esp, TRIP(saved_esp)
  sgdt TRIP(saved_gdtr)
  sidt TRIP(saved_idtr)
  lgdt TRIP(trip_gdtr)
  ljmp $0x08, $TRIP(pm16)
  .code16
pm16:
  movw $0x10, %ax
  movw %ax, %ds
  movw %ax, %es
  movw %ax, %ss
  movl %cr0, %eax
  andl $~1, %eax
  movl %eax, %cr0
  ljmp $0, $TRIP(real)
real:
  xorw %ax, %ax
  movw %ax, %ds
  movw %ax, %es
  movw %ax, %ss
  movw $TRIP(real_stack_top), %sp
  lidtl TRIP(real_idtr)
  sti
  hlt
  cli
  movl %cr0, %eax
  orl $1, %eax
  movl %eax, %cr0
  ljmpl $0x18, $TRIP(pm32)
  .code32
pm32:
  movw $0x20, %ax
  movw %ax, %ds
  movw %ax, %es
  movw %ax, %ss
  lgdt TRIP(saved_gdtr)
  lidt TRIP(saved_idtr)
  ljmp $0x08, $TRIP(back)
back:
  movw $0x10, %ax /* entry.S's data segment */
  movw %ax, %ds
  movw %ax, %es
  movw %ax, %ss
  movw %ax, %fs
  movw %ax, %gs
  movl TRIP(saved_esp), %esp
  popal
  ret

  .align 8
trip_gdt:
  .quad 0
  .quad 0x00009A000000FFFF /* 0x08: code, 16-bit, base 0, 64 KiB */
  .quad 0x000092000000FFFF /* 0x10: data, 64 KiB */
  .quad 0x00CF9A000000FFFF /* 0x18: code, flat 4 GiB, 32-bit */
  .quad 0x00CF92000000FFFF /* 0x20: data, flat 4 GiB */
trip_gdtr:
  .word 39
  .long TRIP(trip_gdt)
real_idtr:
  .word 0x3ff
  .long 0
saved_gdtr:
  .word 0
  .long 0
saved_idtr:
  .word 0
  .long 0
saved_esp:
  .long 0
  .space 256
real_stack_top:
bios_trip_end:

  .section .note.GNU-stack, "", @progbits
