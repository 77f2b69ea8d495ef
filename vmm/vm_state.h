// Vm's private state, shared by vm.cc (creation) and vm_run.cc (running).
#ifndef MINIVMM_VMM_VM_STATE_H_
#define MINIVMM_VMM_VM_STATE_H_

#include <memory>
#include <mutex>
#include <vector>

#include "devices/debug_exit.h"
#include "devices/uart16550.h"
#include "hypercalls/dispatcher.h"
#include "vmm/ktrace/kvm_exit_trace.h"
#include "vmm/machine/machine.h"
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
  // is closed (the machine's own memory with it).
  MappedMemory ram;
  GuestMemory memory;
  std::unique_ptr<Machine> machine;

  KvmSystem kvm;
  KvmVm vm;
  std::vector<std::unique_ptr<KvmVcpu>> vcpus;  // indexed by vCPU number
  std::unique_ptr<KvmExitTrace> kernel_exits;  // VmConfig::kernel_exits

  ConsoleTail console;
  GuestReports reports;
  Dispatcher dispatcher;
  Bus pio_bus{"pio"};
  Bus mmio_bus{"mmio"};
  // The devices every machine has; each machine registers them where it
  // puts them, beside its own (vmm/machine/).
  Uart16550 uart;
  DebugExit debug_exit;
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

  State(const VmConfig& cfg, MappedMemory ram_map, std::unique_ptr<Machine> kind,
        KvmSystem kvm_system, KvmVm kvm_vm)
      : config(cfg),
        ram(std::move(ram_map)),
        memory(ram.span()),
        machine(std::move(kind)),
        kvm(std::move(kvm_system)),
        vm(std::move(kvm_vm)),
        console(cfg.console),
        uart(&console),
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
