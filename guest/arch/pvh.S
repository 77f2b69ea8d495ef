/* PVH entry (for running under QEMU): QEMU's `-kernel` finds XEN_ELFNOTE_PHYS32_ENTRY and
 * starts here in 32-bit protected mode, paging off, EBX = hvm_start_info.
 * We build our own GDT and an identity map of the first 4 GiB, enter long
 * mode and join the 64-bit path at KernelMainPvh. There is deliberately no
 * Multiboot header (QEMU would prefer it). */

#define XEN_ELFNOTE_PHYS32_ENTRY 18

  .section .note.Xen, "a", @note
  .balign 4
  .long 4            /* name size ("Xen\0") */
  .long 4            /* desc size */
  .long XEN_ELFNOTE_PHYS32_ENTRY
  .asciz "Xen"
  .long _start_pvh

  .section .text.boot, "ax"
  .code32
  .globl _start_pvh
_start_pvh:
  cli
  cld
  mov %ebx, %esi
  lgdt pvh_gdt_ptr
  /* Page tables: PML4 -> PDPT -> 4 PDs of 2 MiB pages (0-4 GiB). They live
   * outside BSS (.pvh_tables) because the 64-bit path zeroes BSS. */
  mov $pvh_tables, %edi
  mov $(6 * 1024), %ecx
  xor %eax, %eax
  rep stosl
  movl $(pvh_tables + 0x1000 + 3), pvh_tables            /* PML4[0] -> PDPT */
  mov $pvh_tables + 0x1000, %edi
  mov $(pvh_tables + 0x2000 + 3), %eax
  mov $4, %ecx
1:
  mov %eax, (%edi)                                       /* PDPT[i] -> PD i */
  add $0x1000, %eax
  add $8, %edi
  loop 1b
  mov $pvh_tables + 0x2000, %edi
  mov $0x83, %eax                                        /* P | W | PS */
  xor %edx, %edx
  mov $2048, %ecx
2:
  mov %eax, (%edi)
  mov %edx, 4(%edi)
  add $0x200000, %eax
  adc $0, %edx
  add $8, %edi
  loop 2b

  mov %cr4, %eax
  or $0x620, %eax                  /* PAE | OSFXSR | OSXMMEXCPT */
  mov %eax, %cr4
  mov $pvh_tables, %eax
  mov %eax, %cr3
  mov $0xC0000080, %ecx            /* EFER */
  rdmsr
  or $0xD01, %eax                  /* LME | SCE | NXE */
  wrmsr
  mov %cr0, %eax
  and $~0x0C, %eax                 /* clear EM, TS */
  or $0x80010023, %eax             /* PG | WP | NE | MP | PE */
  mov %eax, %cr0
  ljmp $0x08, $pvh_long

  .code64
pvh_long:
  mov $0x10, %eax
  mov %eax, %ds
  mov %eax, %es
  mov %eax, %ss
  xor %eax, %eax
  mov %eax, %fs
  mov %eax, %gs
  mov %esi, %r12d                  /* hvm_start_info, zero-extended */
  lea __bss_start(%rip), %rdi
  lea __bss_end(%rip), %rcx
  sub %rdi, %rcx
  shr $3, %rcx
  xor %eax, %eax
  rep stosq
  lea boot_stack_top(%rip), %rsp
  xor %ebp, %ebp
  mov %r12, %rdi
  call KernelMainPvh
3:
  ud2
  jmp 3b

  .data
  .balign 16
/* Same layout as the VMM's GDT (docs/design.md "GDT"); the TSS descriptor (5-6) is
 * filled in by KernelMainPvh. Accessed bits preset. */
  .globl pvh_gdt
pvh_gdt:
  .quad 0
  .quad 0x00af9b000000ffff         /* 0x08 kernel code, 64-bit */
  .quad 0x00cf93000000ffff         /* 0x10 kernel data */
  .quad 0x00cff3000000ffff         /* 0x1b user data */
  .quad 0x00affb000000ffff         /* 0x23 user code, 64-bit */
  .quad 0, 0                       /* 0x28 TSS */
  .quad 0, 0, 0                    /* TLS slots 7-9 */
pvh_gdt_end:
pvh_gdt_ptr:
  .word pvh_gdt_end - pvh_gdt - 1
  .long pvh_gdt

  .section .pvh_tables, "aw", @nobits
  .balign 4096
pvh_tables:
  .skip 6 * 4096

  .section .note.GNU-stack, "", @progbits
