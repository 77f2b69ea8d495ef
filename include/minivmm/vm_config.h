// How to build a VM. Part of the public API (docs/API.md).
#ifndef MINIVMM_VM_CONFIG_H_
#define MINIVMM_VM_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "minivmm/cpu_features.h"
#include "minivmm/machine.h"
#include "minivmm/sinks.h"

namespace minivmm {

struct VmConfig {
  // The kind of machine (minivmm/machine.h, docs/machines.md). Every other
  // field applies to both unless it says otherwise.
  MachineKind machine = MachineKind::kBuiltin;
  // Guest RAM in bytes, a multiple of 2 MiB in [MVMM_MEMORY_MIN, MVMM_MEMORY_MAX].
  uint64_t memory_bytes = 64ull << 20;
  // The guest ELF. Empty means the guest kernel built with minivmm
  // (DefaultGuestKernelPath()). The PC machine needs one: a Multiboot-1 image
  // (ELF32, ELF64 or the header's addresses).
  std::string kernel_path;
  // The guest's command line (docs/design.md "Guest command line"), at most
  // MVMM_CMDLINE_MAX bytes. The PC machine passes "<kernel_path> <cmdline>"
  // in the Multiboot information, as QEMU's -kernel and -append do.
  std::string cmdline;
  // The PC machine only: a file loaded as the one Multiboot module, as
  // QEMU's -initrd (kvm-unit-tests' environment file); empty: none.
  std::string initrd_path;
  // The PC machine only: KVM's in-kernel PIT (8254) on ports 0x40-0x43,
  // its IRQ 0 on the IOAPIC's pin 2 (QEMU's default; kvm-unit-tests runs
  // some tests with pit=off). Off: those ports are unclaimed.
  bool pit = false;
  // The PC machine only: QEMU's pc-testdev (devices/pc_testdev.h; ports
  // 0xe0-0xeb and 0x2000-0x2017, 64 KiB of MMIO at 0xff000000), which
  // kvm-unit-tests' emulator and eventinj tests use.
  bool pc_testdev = false;
  // The PC machine only: Hyper-V's enlightenments as KVM offers them, as
  // QEMU's -cpu host,hv_passthrough (docs/machines.md): KVM's Hyper-V CPUID
  // leaves at 0x40000000 (KVM's own at 0x40000100) and SynIC on every vCPU;
  // the reference TSC page, SynIC and its synthetic timers are KVM's, in the
  // kernel. Refused with FailedPrecondition where KVM lacks them.
  bool hyperv = false;
  // The PC machine only, with `hyperv`: QEMU's hyperv-testdev
  // (devices/hyperv_testdev.h; port 0x3000), whose SINT routes and message
  // and event connections kvm-unit-tests' hyperv_synic and
  // hyperv_connections use; the connections' HvPostMessage and HvSignalEvent
  // are served by the VMM (devices/hyperv_synic.h).
  bool hyperv_testdev = false;
  // The q35 machine only: KVM's split irqchip, as QEMU's
  // kernel-irqchip=split (the local APICs in KVM, the IOAPIC minivmm's own,
  // devices/ioapic.h; no PIC or PIT). Off: KVM's full irqchip, as on pc
  // (QEMU's q35 default).
  bool split_irqchip = false;
  // The q35 machine only, with split_irqchip: an Intel IOMMU (VT-d;
  // devices/intel_iommu.h) at 0xFED90000 with DMA remapping, interrupt
  // remapping and queued invalidation, described by an ACPI DMAR, as QEMU's
  // -device intel-iommu,intremap=on,eim=off.
  bool intel_iommu = false;
  // The q35 machine only: QEMU's edu PCI device (devices/edu.h), whose DMA
  // and interrupts go through the IOMMU when there is one.
  bool edu = false;
  // vCPU 0's periodic timer interrupts per second (vector 0x20); 0 = off,
  // which keeps runs deterministic. At most 10000. Other vCPUs have no
  // periodic timer until the guest sets one (vcpu_op(set_periodic_timer)).
  // The built-in machine only: the PC machine's timers are its guest's own
  // (the local APICs', the PIT's), and a rate there is refused.
  uint32_t timer_hz = 0;
  // Wall-clock limit for Run(); absl::InfiniteDuration() for none.
  absl::Duration timeout = absl::InfiniteDuration();
  // Guest console bytes go here; null drops them. Not owned; must outlive the VM.
  ConsoleSink* console = nullptr;
  // vCPUs, 1 to MVMM_MAX_CPUS (32). Each runs on a thread of its own during
  // Vm::Run and enters the guest at the same entry point with its number in
  // RSI (docs/design.md "Several vCPUs"); more than the host has cores works,
  // only slower.
  uint32_t cpus = 1;
  // CPUID as the user changes it (include/minivmm/cpu_features.h), on
  // either machine: each "-name" takes a bit away, each "+name" asks for one;
  // where this host's KVM or the machine cannot give it, it is left clear
  // with a warning in RunResult::notes, as QEMU's -cpu does, or, with
  // cpu_enforce (QEMU's `enforce`), Vm::Create refuses. A vendor string (12
  // characters; empty: KVM's) replaces leaf 0's and 0x80000000's. Empty: every vCPU's CPUID is
  // KVM's supported one with the machine's own corrections (docs/design.md "CPUID").
  std::vector<CpuFeatureChange> cpu_features;
  std::string cpu_vendor;
  bool cpu_enforce = false;
  // Path of the /dev/kvm device.
  std::string kvm_device = "/dev/kvm";
  // The wasted-exit analysis (docs/wasted-exits.md): which operations and
  // exits changed nothing, in RunResult::stats.wasted_* and
  // ExitEvent::wasted. Off: the exit path does not pay for it.
  bool analyse_waste = false;
  // Where exits come from (docs/sites.md): each exit's guest RIP and
  // frame-pointer chain, counted per (cause, stack) in RunResult::sites.
  // Off: the exit path does not pay for it.
  bool record_sites = false;
  // Every exit of every vCPU as KVM saw it, from its kvm:kvm_exit
  // tracepoint (include/minivmm/kernel_exits.h), in RunResult::kernel_exits:
  // the exits KVM handles in the kernel beside those that reach minivmm.
  // Vm::Create refuses it (FailedPrecondition, one line) where the
  // tracepoint cannot be read. Off: nothing is opened.
  bool kernel_exits = false;
  // With kernel_exits, also each exit on its own, in time order, in
  // RunResult::kernel_exit_events: 32 bytes of memory per exit, kept until
  // the run ends (what `minivmm run --kernel-exits --trace` writes). Without
  // kernel_exits, Vm::Create refuses it (InvalidArgument).
  bool kernel_exit_events = false;
  // Each vCPU's last exits, kept in a ring of this many entries
  // (RunResult::recent_exits, docs/design.md "Recent exits"), at most
  // kMaxRecentExits; 0: none, and the exit path does not pay for it. Unset:
  // kDefaultRecentExits in a build of the library without NDEBUG (the debug
  // presets, where every whole-VM test keeps them), 0 in a release build.
  std::optional<uint32_t> recent_exits;
};

inline constexpr uint32_t kMaxRecentExits = 4096;
inline constexpr uint32_t kDefaultRecentExits = 16;

// Where the guest kernel built with this copy of minivmm lives: the build
// tree's copy when run from the build tree, else the installed one.
std::string DefaultGuestKernelPath();

// The built-in guest with its event counting compiled out, beside the
// counted kernel at `counted_kernel` (minivmm-guest-uncounted.elf in the
// same directory): the kernel that `minivmm bench` times, since no timed
// path of it runs the guest's own bookkeeping. It reports
// kernel.counters=0 and no kernel counter (guest/README.md).
std::string UncountedGuestKernelPath(const std::string& counted_kernel);

}  // namespace minivmm

#endif  // MINIVMM_VM_CONFIG_H_
