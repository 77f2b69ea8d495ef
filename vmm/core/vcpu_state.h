// The narrow view of one vCPU's registers that devices and hypercall handlers
// get. Backed by KVM's synced register block (KVM_CAP_SYNC_REGS) in the VMM,
// so reads cost nothing and writes cost no ioctl: they are marked dirty and
// applied by the next KVM_RUN. Tests back it with a plain struct.
#ifndef MINIVMM_VMM_CORE_VCPU_STATE_H_
#define MINIVMM_VMM_CORE_VCPU_STATE_H_

#include <cstdint>

namespace minivmm {

enum class Reg : uint8_t {
  kRax,
  kRbx,
  kRcx,
  kRdx,
  kRsi,
  kRdi,
  kRsp,
  kRbp,
  kR8,
  kR9,
  kR10,
  kR11,
  kR12,
  kR13,
  kR14,
  kR15,
  kRip,
  kRflags,
};

// What a hypercall exit needs, read in one call on the exit path.
struct HypercallRegs {
  uint64_t rax, rdi, rsi, rdx, r10, r8;
  int cpl;
};

class VcpuState {
 public:
  virtual ~VcpuState() = default;

  // The number, arguments and CPL of a hypercall. The default reads them one
  // by one; KvmVcpu reads the synced block directly.
  virtual HypercallRegs ReadHypercallRegs() const {
    return {Get(Reg::kRax), Get(Reg::kRdi), Get(Reg::kRsi), Get(Reg::kRdx),
            Get(Reg::kR10), Get(Reg::kR8),  Cpl()};
  }

  virtual uint64_t Get(Reg reg) const = 0;
  virtual void Set(Reg reg, uint64_t value) = 0;

  virtual uint64_t Cr0() const = 0;
  virtual void SetCr0(uint64_t value) = 0;

  // Current privilege level, 0-3 (from the synced CS/SS state).
  virtual int Cpl() const = 0;
};

// A VcpuState over plain fields, for unit tests and for tools.
class PlainVcpuState final : public VcpuState {
 public:
  uint64_t regs[18] = {};
  uint64_t cr0 = 0x80050033;
  int cpl = 0;

  uint64_t Get(Reg reg) const override { return regs[static_cast<int>(reg)]; }
  void Set(Reg reg, uint64_t value) override { regs[static_cast<int>(reg)] = value; }
  uint64_t Cr0() const override { return cr0; }
  void SetCr0(uint64_t value) override { cr0 = value; }
  int Cpl() const override { return cpl; }
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_CORE_VCPU_STATE_H_
