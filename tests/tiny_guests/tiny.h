/* Macros shared by the tiny test guests (GNU as, AT&T syntax). */
#define HC_PORT 0xEC
#define HYPERCALL(nr) \
  mov $(nr), % eax;   \
  out % eax, $HC_PORT
#define SHUTDOWN(code) \
  mov $2, % edi;       \
  mov $(code), % esi;  \
  HYPERCALL(29)
/* Makes entry `vec` of the IDT at `idt` a present, DPL 0, 64-bit interrupt
 * gate to `handler` in the kernel CS (0x08). Clobbers RAX and RDI. */
#define IDT_GATE(idt, vec, handler)   \
  lea idt(%rip), %rdi;                \
  lea handler(%rip), %rax;            \
  mov %ax, (vec)*16(%rdi);            \
  movw $0x08, (vec)*16+2(%rdi);       \
  movw $0x8e00, (vec)*16+4(%rdi);     \
  shr $16, %rax;                      \
  mov %ax, (vec)*16+6(%rdi);          \
  shr $16, %rax;                      \
  mov %eax, (vec)*16+8(%rdi)
