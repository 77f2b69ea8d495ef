#include "vmm/kvm/vcpu.h"

#include <errno.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/strings/str_format.h"
#include "vmm/kvm/flex_ioctls.h"
#include "vmm/kvm/kick.h"
#include "vmm/kvm/kvm_error.h"

namespace minivmm {
namespace {

constexpr uint64_t kCr0Pe = 1ull << 0, kCr0Mp = 1ull << 1, kCr0Et = 1ull << 4, kCr0Ne = 1ull << 5,
                   kCr0Wp = 1ull << 16, kCr0Pg = 1ull << 31;
constexpr uint64_t kCr4Pae = 1ull << 5, kCr4Osfxsr = 1ull << 9, kCr4Osxmmexcpt = 1ull << 10;
constexpr uint64_t kEferSce = 1ull << 0, kEferLme = 1ull << 8, kEferLma = 1ull << 10,
                   kEferNxe = 1ull << 11;

kvm_segment Segment(uint16_t selector, uint8_t type, bool code) {
  kvm_segment s{};
  s.base = 0;
  s.limit = 0xffffffff;
  s.selector = selector;
  s.type = type;
  s.present = 1;
  s.dpl = 0;
  s.s = 1;
  s.l = code ? 1 : 0;
  s.db = code ? 0 : 1;
  s.g = 1;
  return s;
}

// VcpuState reads the general registers as an array in Reg order.
static_assert(sizeof(kvm_regs) == kRegCount * sizeof(uint64_t));
static_assert(offsetof(kvm_regs, rax) == 8 * static_cast<int>(Reg::kRax));
static_assert(offsetof(kvm_regs, rdi) == 8 * static_cast<int>(Reg::kRdi));
static_assert(offsetof(kvm_regs, r8) == 8 * static_cast<int>(Reg::kR8));
static_assert(offsetof(kvm_regs, r10) == 8 * static_cast<int>(Reg::kR10));
static_assert(offsetof(kvm_regs, r15) == 8 * static_cast<int>(Reg::kR15));
static_assert(offsetof(kvm_regs, rip) == 8 * static_cast<int>(Reg::kRip));
static_assert(offsetof(kvm_regs, rflags) == 8 * static_cast<int>(Reg::kRflags));

static_assert(std::is_same_v<__u64, RegWord>);

RegWord* RegisterFile(kvm_run* run) {
  // Safety: kvm_regs is 18 consecutive __u64 (= RegWord) in Reg order
  // (asserted above), inside the kvm_run mapping that lives as long as the
  // vCPU.
  return reinterpret_cast<RegWord*>(&run->s.regs.regs);
}

}  // namespace

KvmVcpu::KvmVcpu(Fd fd, int id, kvm_run* run, size_t run_size)
    : Vcpu(RegisterFile(run), &run->kvm_dirty_regs, KVM_SYNC_X86_REGS, &run->s.regs.sregs.ss.dpl),
      fd_(std::move(fd)),
      id_(id),
      run_(run),
      run_size_(run_size) {}

absl::StatusOr<std::unique_ptr<KvmVcpu>> KvmVcpu::Create(int kvm_fd, int vcpu_fd, int id) {
  Fd fd(vcpu_fd);
  int size = ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
  if (size < static_cast<int>(sizeof(kvm_run))) return KvmError("KVM_GET_VCPU_MMAP_SIZE");
  void* map = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return KvmError("mmap(kvm_run)");
  std::unique_ptr<KvmVcpu> vcpu(new KvmVcpu(std::move(fd), id, static_cast<kvm_run*>(map), size));
  vcpu->run_->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
  int stats = ioctl(vcpu->fd_.get(), KVM_GET_STATS_FD, 0);
  if (stats >= 0) vcpu->stats_fd_ = Fd(stats);  // optional: older hosts lack it
  return vcpu;
}

KvmVcpu::~KvmVcpu() { munmap(run_, run_size_); }

namespace {

constexpr int kMaxCpuidEntries = 256;

// KVM_GET_SUPPORTED_CPUID or KVM_GET_SUPPORTED_HV_CPUID on the system fd.
absl::StatusOr<std::vector<kvm_cpuid_entry2>> SupportedCpuid(int kvm_fd, unsigned long request,
                                                             const char* name) {
  // kvm_cpuid2 laid out by hand: see flex_ioctls.h.
  std::vector<uint8_t> buffer(kKvmCpuid2HeaderBytes + kMaxCpuidEntries * sizeof(kvm_cpuid_entry2));
  uint32_t nent = kMaxCpuidEntries;
  std::memcpy(buffer.data(), &nent, sizeof(nent));
  if (ioctl(kvm_fd, request, buffer.data()) < 0) return KvmError(name);
  std::memcpy(&nent, buffer.data(), sizeof(nent));
  std::vector<kvm_cpuid_entry2> entries(std::min<uint32_t>(nent, kMaxCpuidEntries));
  std::memcpy(entries.data(), buffer.data() + kKvmCpuid2HeaderBytes,
              entries.size() * sizeof(kvm_cpuid_entry2));
  return entries;
}

}  // namespace

absl::Status KvmVcpu::SetCpuid(int kvm_fd, const CpuidMachine& machine,
                              std::vector<std::string>* not_given) {
  absl::StatusOr<std::vector<kvm_cpuid_entry2>> supported =
      SupportedCpuid(kvm_fd, kKvmGetSupportedCpuid, "KVM_GET_SUPPORTED_CPUID");
  if (!supported.ok()) return supported.status();
  std::vector<kvm_cpuid_entry2>& entries = *supported;
  AdjustCpuid(entries, machine);
  if (absl::Status choices = ApplyCpuChoices(entries, machine, not_given); !choices.ok())
    return choices;
  if (machine.hyperv) {
    absl::StatusOr<std::vector<kvm_cpuid_entry2>> hv =
        SupportedCpuid(kvm_fd, kKvmGetSupportedHvCpuid, "KVM_GET_SUPPORTED_HV_CPUID");
    if (!hv.ok()) return hv.status();
    AddHypervLeaves(entries, *hv);
    if (entries.size() > kMaxCpuidEntries)
      return absl::InternalError("KVM_SET_CPUID2: more than 256 leaves with Hyper-V's");
  }
  std::vector<uint8_t> buffer(kKvmCpuid2HeaderBytes + entries.size() * sizeof(kvm_cpuid_entry2));
  const uint32_t nent = static_cast<uint32_t>(entries.size());
  std::memcpy(buffer.data(), &nent, sizeof(nent));
  std::memcpy(buffer.data() + kKvmCpuid2HeaderBytes, entries.data(),
              entries.size() * sizeof(kvm_cpuid_entry2));
  if (ioctl(fd_.get(), kKvmSetCpuid2, buffer.data()) < 0) return KvmError("KVM_SET_CPUID2");
  if (machine.hyperv) {
    // SynIC (and with it the synthetic timers): KVM handles its MSRs and
    // delivers its interrupts through the local APIC, and tells the VMM of
    // each SynIC control write with KVM_EXIT_HYPERV.
    kvm_enable_cap cap{};
    cap.cap = KVM_CAP_HYPERV_SYNIC2;
    if (ioctl(fd_.get(), KVM_ENABLE_CAP, &cap) < 0)
      return KvmError("KVM_ENABLE_CAP(KVM_CAP_HYPERV_SYNIC2)");
  }
  if (machine.local_apic_in_kernel) return absl::OkStatus();
  // No local APIC: IA32_APIC_BASE disabled. KVM enables it at reset, with or
  // without an APIC in the kernel, and keeps CPUID.1:EDX.APIC equal to its
  // enable bit, whatever KVM_SET_CPUID2 said.
  constexpr uint32_t kMsrIa32ApicBase = 0x1b;
  std::array<uint8_t, kKvmMsrsHeaderBytes + sizeof(kvm_msr_entry)> msrs{};
  const uint32_t nmsrs = 1;
  std::memcpy(msrs.data(), &nmsrs, sizeof(nmsrs));
  kvm_msr_entry apic_base{};
  apic_base.index = kMsrIa32ApicBase;
  apic_base.data = 0;
  std::memcpy(msrs.data() + kKvmMsrsHeaderBytes, &apic_base, sizeof(apic_base));
  const int set = ioctl(fd_.get(), kKvmSetMsrs, msrs.data());
  if (set < 0) return KvmError("KVM_SET_MSRS");
  if (set != 1) return absl::InternalError("KVM_SET_MSRS: KVM refused IA32_APIC_BASE = 0");
  return absl::OkStatus();
}

absl::Status KvmVcpu::SetLongModeBoot(const LongModeBoot& boot) {
  kvm_sregs sregs{};
  if (ioctl(fd_.get(), KVM_GET_SREGS, &sregs) < 0) return KvmError("KVM_GET_SREGS");
  sregs.cr0 = kCr0Pe | kCr0Mp | kCr0Et | kCr0Ne | kCr0Wp | kCr0Pg;
  sregs.cr3 = boot.cr3;
  sregs.cr4 = kCr4Pae | kCr4Osfxsr | kCr4Osxmmexcpt;
  sregs.efer = kEferSce | kEferLme | kEferLma | kEferNxe;
  // Code 0xb (execute/read, accessed), data 0x3 (read/write, accessed): the
  // GDT is read-only to the guest, so cached descriptors must already be
  // marked accessed.
  sregs.cs = Segment(0x08, 0xb, true);
  sregs.ds = sregs.es = sregs.ss = Segment(0x10, 0x3, false);
  sregs.fs = sregs.gs = Segment(0x10, 0x3, false);
  kvm_segment tr{};
  tr.base = boot.tss_base;
  tr.limit = 103;
  tr.selector = boot.tr_selector;
  tr.type = 11;  // 64-bit TSS, busy
  tr.present = 1;
  sregs.tr = tr;
  sregs.ldt = kvm_segment{};
  sregs.ldt.unusable = 1;
  sregs.gdt.base = boot.gdt_base;
  sregs.gdt.limit = boot.gdt_limit;
  sregs.idt.base = 0;
  sregs.idt.limit = 0;
  kvm_regs regs{};
  regs.rip = boot.rip;
  regs.rsp = boot.rsp;
  regs.rdi = boot.rdi;
  regs.rsi = boot.rsi;
  regs.rflags = 0x2;
  return SetPowerOnState(sregs, regs);
}

absl::Status KvmVcpu::SetPowerOnState(const kvm_sregs& sregs, const kvm_regs& regs) {
  if (ioctl(fd_.get(), KVM_SET_SREGS, &sregs) < 0) return KvmError("KVM_SET_SREGS");
  if (ioctl(fd_.get(), KVM_SET_REGS, &regs) < 0) return KvmError("KVM_SET_REGS");
  // The synced copy in kvm_run is refreshed by the first KVM_RUN.
  run_->kvm_dirty_regs = 0;
  return absl::OkStatus();
}

absl::Status KvmVcpu::SetProtectedModeBoot(const ProtectedModeBoot& boot) {
  kvm_sregs sregs{};
  if (ioctl(fd_.get(), KVM_GET_SREGS, &sregs) < 0) return KvmError("KVM_GET_SREGS");
  // CR0.ET as after reset; CR4 and EFER zero: no paging, no long mode.
  sregs.cr0 = kCr0Pe | kCr0Et;
  sregs.cr3 = 0;
  sregs.cr4 = 0;
  sregs.efer = 0;
  // Selectors as QEMU's Multiboot loader leaves them (CS 0x10, data 0x18);
  // the hidden parts are what counts: base 0, limit 4 GiB, 32-bit.
  sregs.cs = Segment(0x10, 0xb, true);
  sregs.cs.l = 0;
  sregs.cs.db = 1;
  sregs.ds = sregs.es = sregs.ss = sregs.fs = sregs.gs = Segment(0x18, 0x3, false);
  kvm_segment tr{};
  tr.limit = 0xffff;
  tr.type = 11;  // 32-bit TSS, busy: what a protected-mode entry requires
  tr.present = 1;
  sregs.tr = tr;
  sregs.ldt = kvm_segment{};
  sregs.ldt.type = 2;
  sregs.ldt.limit = 0xffff;
  sregs.ldt.present = 1;
  sregs.gdt = {};
  sregs.idt = {};
  kvm_regs regs{};
  regs.rip = boot.eip;
  regs.rax = boot.eax;
  regs.rbx = boot.ebx;
  regs.rflags = 0x2;
  return SetPowerOnState(sregs, regs);
}

absl::Status KvmVcpu::EnterRealMode(uint16_t segment, uint16_t offset) {
  __atomic_store_n(&run_->immediate_exit, 1, __ATOMIC_SEQ_CST);
  const int rc = ioctl(fd_.get(), KVM_RUN, 0);
  const int error = errno;
  ClearKick();
  if (rc == 0 || error != EINTR)
    return absl::InternalError(absl::StrFormat(
        "KVM_RUN with immediate_exit, to complete the exit before real mode, returned %d (%s)",
        rc, rc == 0 ? "an exit" : strerror(error)));
  kvm_sregs sregs{};
  if (ioctl(fd_.get(), KVM_GET_SREGS, &sregs) < 0) return KvmError("KVM_GET_SREGS");
  auto real = [](uint16_t selector, uint8_t type) {
    kvm_segment s{};
    s.base = uint64_t{selector} << 4;
    s.limit = 0xffff;
    s.selector = selector;
    s.type = type;
    s.present = 1;
    s.s = 1;
    return s;
  };
  sregs.cr0 = kCr0Et;
  sregs.cr3 = 0;
  sregs.cr4 = 0;
  sregs.efer = 0;
  sregs.cs = real(segment, 0xb);
  sregs.ds = sregs.es = sregs.ss = sregs.fs = sregs.gs = real(0, 0x3);
  sregs.gdt = {};
  sregs.idt = {};
  sregs.idt.limit = 0x3ff;
  std::memset(sregs.interrupt_bitmap, 0, sizeof(sregs.interrupt_bitmap));
  kvm_regs regs{};
  regs.rip = offset;
  regs.rflags = 0x2;
  return SetPowerOnState(sregs, regs);
}

absl::Status KvmVcpu::BindToCurrentThread() {
  if (absl::Status s = PrepareKickSignal(fd_.get()); !s.ok()) return s;
  thread_ = pthread_self();
  thread_known_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

void KvmVcpu::UnbindFromThread() {
  thread_known_.store(false, std::memory_order_seq_cst);
  // Kick() may run in a signal handler, so it takes no lock: wait out the
  // ones that saw the thread before it was forgotten.
  while (kicks_in_flight_.load(std::memory_order_seq_cst) != 0) sched_yield();
  DrainKickSignal();
  ClearKick();
}

VcpuInterruptState KvmVcpu::InterruptState() const {
  // The rule (interrupt_rule.h) decides; these are its inputs as kvm_run has
  // them. A hypercall that set IF (set_if(1)) changed the synced RFLAGS and
  // marked them dirty; ready_for_interrupt_injection and if_flag still
  // describe the state at the exit. KVM rewrites both at every return of
  // KVM_RUN through its run path (post_kvm_run_save, after `out:` in
  // kvm_arch_vcpu_ioctl_run), the immediate_exit -EINTR return before any
  // entry included, so they are current whenever Run() has returned; before
  // the first KVM_RUN the mapping is zeroed, which reads as not ready.
  return {.regs_dirty = (run_->kvm_dirty_regs & KVM_SYNC_X86_REGS) != 0,
          .synced_if = (run_->s.regs.regs.rflags & (1u << 9)) != 0,
          .kvm_ready = run_->ready_for_interrupt_injection != 0,
          .kvm_if_flag = run_->if_flag != 0,
          .kvm_flags_current = true};
}

absl::Status KvmVcpu::InjectInterrupt(uint32_t vector) {
  kvm_interrupt irq{};
  irq.irq = vector;
  if (ioctl(fd_.get(), KVM_INTERRUPT, &irq) < 0) return KvmError("KVM_INTERRUPT");
  return absl::OkStatus();
}

void KvmVcpu::RequestInterruptWindow(bool on) { run_->request_interrupt_window = on ? 1 : 0; }

void KvmVcpu::Kick() {
  __atomic_store_n(&run_->immediate_exit, 1, __ATOMIC_SEQ_CST);
  kicks_in_flight_.fetch_add(1, std::memory_order_seq_cst);
  if (thread_known_.load(std::memory_order_seq_cst)) SendKickSignal(thread_);
  kicks_in_flight_.fetch_sub(1, std::memory_order_seq_cst);
}

void KvmVcpu::ClearKick() { __atomic_store_n(&run_->immediate_exit, 0, __ATOMIC_SEQ_CST); }

uint64_t KvmVcpu::Cr0() const { return run_->s.regs.sregs.cr0; }

void KvmVcpu::SetCr0(uint64_t value) {
  run_->s.regs.sregs.cr0 = value;
  MarkSregsDirty();
}

uint64_t KvmVcpu::Cr3() const { return run_->s.regs.sregs.cr3; }

// KVM applies a dirty sregs block with KVM_SET_SREGS semantics on the next
// KVM_RUN: a new CR3 resets the vCPU's MMU context, so the guest's next
// access walks the new tables.
void KvmVcpu::SetCr3(uint64_t value) {
  run_->s.regs.sregs.cr3 = value;
  MarkSregsDirty();
}

uint64_t KvmVcpu::FsBase() const { return run_->s.regs.sregs.fs.base; }

void KvmVcpu::SetFsBase(uint64_t value) {
  run_->s.regs.sregs.fs.base = value;
  MarkSregsDirty();
}

std::optional<uint64_t> KvmVcpu::FpuFingerprint() const {
  kvm_fpu fpu{};
  if (ioctl(fd_.get(), KVM_GET_FPU, &fpu) < 0) return std::nullopt;
  // Field by field: the padding takes no part.
  auto bytes = [](const auto& array) {
    // Safety: a plain array of bytes inside `fpu`, which outlives the view.
    return std::string_view(reinterpret_cast<const char*>(array), sizeof(array));
  };
  return absl::HashOf(bytes(fpu.fpr), fpu.fcw, fpu.fsw, fpu.ftwx, fpu.last_opcode, fpu.last_ip,
                      fpu.last_dp, bytes(fpu.xmm), fpu.mxcsr);
}

void KvmVcpu::MarkSregsDirty() {
  // KVM's sregs snapshot lists an interrupt it has queued but not yet
  // delivered in interrupt_bitmap, and writing the sregs back re-queues
  // whatever that bitmap names. Injection is ours (KVM_INTERRUPT), so the
  // write-back must not carry it: a stale bit delivered the same timer
  // interrupt twice.
  std::memset(run_->s.regs.sregs.interrupt_bitmap, 0, sizeof(run_->s.regs.sregs.interrupt_bitmap));
  run_->kvm_dirty_regs |= KVM_SYNC_X86_SREGS;
}

std::vector<std::pair<std::string, uint64_t>> KvmVcpu::DumpRegisters() const {
  const kvm_regs& r = run_->s.regs.regs;
  const kvm_sregs& s = run_->s.regs.sregs;
  std::vector<std::pair<std::string, uint64_t>> regs = {
      {{"rip", r.rip},       {"rflags", r.rflags}, {"rsp", r.rsp},   {"rbp", r.rbp},
       {"rax", r.rax},       {"rbx", r.rbx},       {"rcx", r.rcx},   {"rdx", r.rdx},
       {"rsi", r.rsi},       {"rdi", r.rdi},       {"r8", r.r8},     {"r9", r.r9},
       {"r10", r.r10},       {"r11", r.r11},       {"r12", r.r12},   {"r13", r.r13},
       {"r14", r.r14},       {"r15", r.r15},       {"cr0", s.cr0},   {"cr2", s.cr2},
       {"cr3", s.cr3},       {"cr4", s.cr4},       {"efer", s.efer}, {"cs", s.cs.selector},
       {"ss", s.ss.selector}}};
  // Which GDT and TSS the vCPU runs on (each vCPU has its own, minivmm_abi/boot.h).
  regs.insert(regs.end(), {{"tr", s.tr.selector},
                           {"tr_base", s.tr.base},
                           {"gdt_base", s.gdt.base},
                           {"gdt_limit", s.gdt.limit}});
  return regs;
}

VcpuIdentity KvmVcpu::Identity() const {
  const kvm_sregs& s = run_->s.regs.sregs;
  return {s.gdt.base, s.tr.selector, s.tr.base};
}

bool KvmVcpu::Code32() const {
  const kvm_segment& cs = run_->s.regs.sregs.cs;
  return cs.l == 0 && cs.db == 1;
}

uint64_t KvmVcpu::TscKhz() const {
  const int khz = ioctl(fd_.get(), KVM_GET_TSC_KHZ, 0);
  return khz > 0 ? static_cast<uint64_t>(khz) : 0;
}

absl::StatusOr<std::vector<std::pair<std::string, uint64_t>>> KvmVcpu::ReadStats() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  if (!stats_fd_.valid()) return out;
  kvm_stats_header header{};
  if (pread(stats_fd_.get(), &header, sizeof(header), 0) != sizeof(header))
    return KvmError("pread(stats header)");
  // kvm_stats_desc laid out by hand (flex_ioctls.h): flags u32, exponent
  // s16, size u16, offset u32, bucket_size u32, then name[name_size].
  size_t desc_size = kKvmStatsDescHeaderBytes + header.name_size;
  std::vector<uint8_t> descs(desc_size * header.num_desc);
  if (pread(stats_fd_.get(), descs.data(), descs.size(), header.desc_offset) !=
      static_cast<ssize_t>(descs.size()))
    return KvmError("pread(stats descriptors)");
  for (uint32_t i = 0; i < header.num_desc; ++i) {
    const uint8_t* desc = descs.data() + i * desc_size;
    uint16_t size;
    uint32_t offset;
    std::memcpy(&size, desc + 6, sizeof(size));
    std::memcpy(&offset, desc + 8, sizeof(offset));
    if (size != 1) continue;  // histograms are left out
    uint64_t value = 0;
    if (pread(stats_fd_.get(), &value, sizeof(value), header.data_offset + offset) != sizeof(value))
      return KvmError("pread(stats data)");
    const char* name = reinterpret_cast<const char*>(desc + kKvmStatsDescHeaderBytes);
    out.emplace_back(std::string(name, strnlen(name, header.name_size)), value);
  }
  return out;
}

}  // namespace minivmm
