/* pc_smp's constants, shared by its C and its assembly. */
#ifndef MINIVMM_TESTS_PC_GUESTS_SMP_H_
#define MINIVMM_TESTS_PC_GUESTS_SMP_H_

#define SMP_MAX_CPUS 32
#define SMP_AP_STACK_SHIFT 12 /* 4 KiB each */
#define SMP_TRAMPOLINE_BASE 0x8000
#define SMP_IPI_VECTOR 0x40
#define SMP_SPURIOUS_VECTOR 0xff

#endif /* MINIVMM_TESTS_PC_GUESTS_SMP_H_ */
