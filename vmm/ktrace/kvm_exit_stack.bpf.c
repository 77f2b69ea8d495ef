// SPDX-License-Identifier: GPL-2.0-only
/* The guest's frame-pointer stack at each kvm:kvm_exit of the vCPU threads
   the VMM names (`threads`), for --kernel-exits --sites (docs/design.md
   "In-kernel exits"). A raw tracepoint program: its argument is KVM's
   struct kvm_vcpu, whose saved RBP it reads, and (kvm_amd only) the VMCB,
   whose RIP, CPL and CS it reads. The walk is vmm/run/frame_walk.cc's: the
   guest's frame pointers are guest-physical addresses (identity-mapped
   guests), read from the VMM's own mapping of guest RAM (`ram_hva`,
   `ram_size`) with bpf_probe_read_user, since the tracepoint runs on the
   vCPU thread, in the VMM's address space. Whatever the guest put in its
   registers and memory, the walk reads at most 31 frames, each inside
   guest RAM.

   The kernel's structures are declared with only the fields read; libbpf
   relocates each field to the running kernel's layout (CO-RE) from its BTF
   (kvm's and kvm_amd's modules). GPL: bpf_probe_read_* are GPL-only
   helpers. */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "vmm/ktrace/kvm_exit_stack.h"

char LICENSE[] SEC("license") = "GPL";

struct kvm_vcpu_arch {
  unsigned long regs[17];
} __attribute__((preserve_access_index));
struct kvm_vcpu {
  struct kvm_vcpu_arch arch;
} __attribute__((preserve_access_index));
struct vmcb_seg {
  __u16 attrib;
} __attribute__((preserve_access_index));
struct vmcb_save_area {
  struct vmcb_seg cs;
  __u8 cpl;
  __u64 rip;
} __attribute__((preserve_access_index));
struct vmcb {
  struct vmcb_save_area save;
} __attribute__((preserve_access_index));
struct vcpu_svm {
  struct kvm_vcpu vcpu;
  struct vmcb *vmcb;
} __attribute__((preserve_access_index));

#define VCPU_REGS_RBP 5
#define SVM_CS_L (1u << 9) /* the L bit of a VMCB segment's attributes */

/* Set by the VMM: its mapping of guest RAM (guest-physical 0 up). */
__u64 ram_hva = 0;
__u64 ram_size = 0;
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1024);
  __type(key, __u32);   /* a vCPU thread's id */
  __type(value, __u32); /* unused */
} threads SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 8 << 20);
} stacks SEC(".maps");

static __always_inline int canonical(__u64 va) {
  __u64 top = va >> 47;
  return top == 0 || top == 0x1ffff;
}

SEC("raw_tp/kvm_exit")
int kvm_exit_stack(struct bpf_raw_tracepoint_args *ctx) {
  __u32 tid = (__u32)bpf_get_current_pid_tgid();
  if (bpf_map_lookup_elem(&threads, &tid) == 0) return 0;
  struct minivmm_exit_stack *out = bpf_ringbuf_reserve(&stacks, sizeof *out, 0);
  /* No room: the exit goes without its stack, which the VMM counts
     (KernelExitCounts::unstacked). */
  if (out == 0) return 0;
  __builtin_memset(out, 0, sizeof *out);
  struct kvm_vcpu *vcpu = (struct kvm_vcpu *)ctx->args[0];
  struct vcpu_svm *svm =
      (struct vcpu_svm *)((char *)vcpu - bpf_core_field_offset(struct vcpu_svm, vcpu));
  struct vmcb *vmcb = BPF_CORE_READ(svm, vmcb);
  __u16 attrib = BPF_CORE_READ(vmcb, save.cs.attrib);
  out->tid = tid;
  out->user = BPF_CORE_READ(vmcb, save.cpl) == 3;
  out->code32 = (attrib & SVM_CS_L) == 0;
  out->frames[0] = BPF_CORE_READ(vmcb, save.rip);
  __u64 fp = BPF_CORE_READ(vcpu, arch.regs[VCPU_REGS_RBP]);
  __u64 previous = 0;
  __u64 base = ram_hva, size = ram_size;
  int depth = 1;
  if (out->code32) fp &= 0xffffffffu;
  for (int i = 1; i < MINIVMM_EXIT_STACK_FRAMES && !out->user; ++i) {
    __u64 width = out->code32 ? 4 : 8;
    if (!out->code32 && !canonical(fp)) break;
    if (fp % width != 0 || fp <= previous || fp >= size || size - fp < 2 * width) break;
    __u64 frame[2] = {0, 0};
    if (out->code32) {
      __u32 words[2];
      if (bpf_probe_read_user(words, sizeof words, (void *)(base + fp)) != 0) break;
      frame[0] = words[0];
      frame[1] = words[1];
    } else if (bpf_probe_read_user(frame, sizeof frame, (void *)(base + fp)) != 0) {
      break;
    }
    if (frame[1] == 0) break;
    out->frames[depth++ & (MINIVMM_EXIT_STACK_FRAMES - 1)] = frame[1];
    previous = fp;
    fp = frame[0];
  }
  out->depth = (unsigned char)depth;
  bpf_ringbuf_submit(out, 0);
  return 0;
}
