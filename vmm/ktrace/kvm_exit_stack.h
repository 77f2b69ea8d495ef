/* What the BPF program kvm_exit_stack.bpf.c hands to kvm_exit_stacks.c for
   each kvm:kvm_exit of a vCPU thread it watches: the guest's frame-pointer
   stack at the exit, walked as vmm/run/frame_walk.h walks a userspace exit's.
   C, shared by the BPF program and the VMM. */
#ifndef MINIVMM_VMM_KTRACE_KVM_EXIT_STACK_H_
#define MINIVMM_VMM_KTRACE_KVM_EXIT_STACK_H_

/* include/minivmm/exit_sites.h's kMaxSiteFrames. */
#define MINIVMM_EXIT_STACK_FRAMES 32

struct minivmm_exit_stack {
  unsigned int tid;     /* the vCPU thread */
  unsigned char depth;  /* frames used, 1 to MINIVMM_EXIT_STACK_FRAMES */
  unsigned char user;   /* taken at CPL 3: the RIP alone, as ExitSite::user */
  unsigned char code32; /* CS.L clear: 32-bit frames */
  unsigned char pad;
  /* frames[0]: the guest RIP; frames[i > 0]: return addresses. */
  unsigned long long frames[MINIVMM_EXIT_STACK_FRAMES];
};

#endif
