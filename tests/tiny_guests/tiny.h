/* Macros shared by the tiny test guests (GNU as, AT&T syntax). */
#define HC_PORT 0xEC
#define HYPERCALL(nr) \
  mov $(nr), % eax;   \
  out % eax, $HC_PORT
#define SHUTDOWN(code) \
  mov $2, % edi;       \
  mov $(code), % esi;  \
  HYPERCALL(29)
