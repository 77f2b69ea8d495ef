// Vm's private state, shared by vm.cc (creation) and vm_run.cc (running).
#ifndef MINIVMM_VMM_VM_STATE_H_
#define MINIVMM_VMM_VM_STATE_H_

#include <memory>
#include <mutex>
#include <vector>

#include "devices/debug_exit.h"
#include "devices/gdt_trap.h"
#include "devices/uart16550.h"
#include "hypercalls/dispatcher.h"
#include "hypercalls/hypercall_port.h"
#include "minivmm/vm.h"
#include "vmm/bus/bus.h"
#include "vmm/kvm/kvm.h"
#include "vmm/memory/mapped_memory.h"
#include "vmm/run/console_tail.h"
#include "vmm/run/vm_signals.h"
#include "vmm/run/vm_timer.h"

namespace minivmm {

struct Vm::State {
  VmConfig config;
  // Declared before the KVM objects so that they are unmapped after the VM fd
  // is closed.
  MappedMemory ram;
  MappedMemory gdt_page;
  GuestMemory memory;

  KvmSystem kvm;
  KvmVm vm;
  std::vector<std::unique_ptr<KvmVcpu>> vcpus;  // indexed by vCPU number

  ConsoleTail console;
  GuestReports reports;
  Dispatcher dispatcher;
  Bus pio_bus{"pio"};
  Bus mmio_bus{"mmio"};
  Uart16550 uart;
  DebugExit debug_exit;
  HypercallPort hypercall_port;
  GdtTrap gdt_trap;
  ExitObserver observer;

  // One per vCPU, fixed once Create returns (RequestStop reads the vector
  // from signal handlers). Each vCPU's timer interrupts go to its own.
  std::vector<std::unique_ptr<VmSignals>> signals;
  // Held while an exit is handled when there are several vCPUs (run_loop.h).
  // A std::mutex (pthread), which ThreadSanitizer sees: Debian's Abseil is
  // not built with it, so an absl::Mutex would look like no lock at all
  // (CMakePresets.json, tsan).
  std::mutex big_lock;
  VmTimer timer;

  bool ran = false;

  State(const VmConfig& cfg, MappedMemory ram_map, MappedMemory gdt_map, KvmSystem kvm_system,
        KvmVm kvm_vm)
      : config(cfg),
        ram(std::move(ram_map)),
        gdt_page(std::move(gdt_map)),
        memory(ram.span()),
        kvm(std::move(kvm_system)),
        vm(std::move(kvm_vm)),
        console(cfg.console),
        uart(&console),
        gdt_trap(gdt_page.span(), cfg.cpus),
        timer(
            cfg.cpus, [this](uint32_t cpu) { signals[cpu]->RaiseInterrupt(); },
            [this] {
              for (const auto& s : signals) s->TimeOut();
            }) {
    for (uint32_t i = 0; i < cfg.cpus; ++i) signals.push_back(std::make_unique<VmSignals>());
  }
};

}  // namespace minivmm

#endif  // MINIVMM_VMM_VM_STATE_H_
