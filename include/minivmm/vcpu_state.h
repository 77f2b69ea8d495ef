// The narrow view of one vCPU's registers that devices and hypercall handlers
// get. Backed by KVM's synced register block (KVM_CAP_SYNC_REGS) in the VMM,
// so reads cost nothing and writes cost no ioctl: they are marked dirty and
// applied by the next KVM_RUN. Tests back it with a plain struct.
#ifndef MINIVMM_VCPU_STATE_H_
#define MINIVMM_VCPU_STATE_H_

#include <cstdint>
#include <optional>

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

inline constexpr int kRegCount = 18;
// A register's storage type: the type of Linux's __u64, so that this view and
// KVM's synced block (struct kvm_regs) are the same type in memory.
using RegWord = unsigned long long;
static_assert(sizeof(RegWord) == 8);

// What a hypercall exit needs.
struct HypercallRegs {
  uint64_t rax, rdi, rsi, rdx, r10, r8;
  int cpl;
};

// Registers are plain loads and stores into a register file the backend
// provides (for KVM, the synced block inside kvm_run, in Reg order); a store
// also sets the backend's "registers dirty" bit so that the next entry
// applies it. Nothing on this path is a virtual call. CR0 and CR3 are
// virtual: a backend may need to do more than store them.
class VcpuState {
 public:
  virtual ~VcpuState() = default;
  VcpuState(const VcpuState&) = delete;
  VcpuState& operator=(const VcpuState&) = delete;

  uint64_t Get(Reg reg) const { return regs_[static_cast<int>(reg)]; }
  void Set(Reg reg, uint64_t value) {
    regs_[static_cast<int>(reg)] = value;
    *dirty_ |= dirty_bit_;
  }
  // Current privilege level, 0-3: SS.DPL, which is the CPL in 64-bit mode.
  int Cpl() const { return *dpl_ & 3; }
  // Where Get and Cpl read (valid as long as this object): for a reader on
  // every exit that keeps them at hand (vmm/run/site_recorder.h).
  const RegWord* registers() const { return regs_; }
  const uint8_t* ss_dpl() const { return dpl_; }

  // The number, arguments and CPL of a hypercall.
  HypercallRegs ReadHypercallRegs() const {
    return {Get(Reg::kRax), Get(Reg::kRdi), Get(Reg::kRsi), Get(Reg::kRdx),
            Get(Reg::kR10), Get(Reg::kR8),  Cpl()};
  }

  virtual uint64_t Cr0() const = 0;
  virtual void SetCr0(uint64_t value) = 0;
  // The page-table base. A write reaches the vCPU before it next runs.
  virtual uint64_t Cr3() const = 0;
  virtual void SetCr3(uint64_t value) = 0;
  // The FS segment's 64-bit base (MSR_FS_BASE). A write reaches the vCPU
  // before it next runs; the selector is left as it is.
  virtual uint64_t FsBase() const = 0;
  virtual void SetFsBase(uint64_t value) = 0;

  // A fingerprint of the vCPU's FPU and SSE registers (x87 registers and
  // control, status and tag words, the last x87 instruction and operand
  // pointers and opcode, the xmm registers, MXCSR): equal values mean
  // nothing changed them, with the odds of a 64-bit hash, within one run.
  // The wasted-exit analysis reads it at CR0.TS changes
  // (docs/wasted-exits.md); nothing else does, and it may cost an ioctl.
  // nullopt when the backend cannot tell.
  virtual std::optional<uint64_t> FpuFingerprint() const { return std::nullopt; }
  // Whether the vCPU runs 32-bit code (CS.L clear and CS.D set: protected
  // mode, or compatibility mode under long mode): the frame walker's frame
  // size (docs/sites.md). The built-in machine's vCPUs never do.
  virtual bool Code32() const { return false; }

 protected:
  // `regs` holds kRegCount registers in Reg order; `*dirty |= dirty_bit`
  // marks them changed; `dpl` is SS.DPL. All must outlive this object.
  VcpuState(RegWord* regs, RegWord* dirty, RegWord dirty_bit, const uint8_t* dpl)
      : regs_(regs), dirty_(dirty), dirty_bit_(dirty_bit), dpl_(dpl) {}

 private:
  RegWord* regs_;
  RegWord* dirty_;
  RegWord dirty_bit_;
  const uint8_t* dpl_;
};

// A VcpuState over plain fields, for unit tests and for tools.
class PlainVcpuState final : public VcpuState {
 public:
  PlainVcpuState() : VcpuState(regs, &dirty, 1, &cpl) {}

  RegWord regs[kRegCount] = {};
  RegWord dirty = 0;  // 1 once a register was set
  uint64_t cr0 = 0x80050033;
  uint64_t cr3 = 0x10000;  // MVMM_PAGE_TABLES_GPA, as at boot
  uint64_t fs_base = 0;
  uint8_t cpl = 0;
  std::optional<uint64_t> fpu_fingerprint;  // what FpuFingerprint() returns

  uint64_t Cr0() const override { return cr0; }
  void SetCr0(uint64_t value) override { cr0 = value; }
  uint64_t Cr3() const override { return cr3; }
  void SetCr3(uint64_t value) override { cr3 = value; }
  uint64_t FsBase() const override { return fs_base; }
  void SetFsBase(uint64_t value) override { fs_base = value; }
  std::optional<uint64_t> FpuFingerprint() const override { return fpu_fingerprint; }
};

}  // namespace minivmm

#endif  // MINIVMM_VCPU_STATE_H_
