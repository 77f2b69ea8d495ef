// Fuzzes Dispatcher::HandleExit and Dispatch: any number, any arguments, any
// CPL, over fake guest RAM of varying size and a fake GDT page.
//
// Input: FuzzVm header (RAM size, fill, GDT size), then operations until the
// input ends, each one byte of kind followed by its operands:
//   kind % 4 == 0  poke: u32 offset, u8 length, bytes into RAM
//   kind % 4 == 1  HandleExit: u8 cpl, number, 5 arguments (FuzzVm::Arg)
//   kind % 4 == 2  Dispatch as a multicall entry would (direct = false)
//   kind % 4 == 3  HandleExit with RAX taken raw (bits above EAX set)
// After every call: the result is >= 0 or a documented -errno, RAX holds it,
// an accepted mmuext_op left CR3 at its last op's frame, send_ipi sent one
// IPI to each vCPU of its mask and touched nothing else, flush_tlb_others
// flagged every target and kicked exactly the running ones,
// a refused call (CPL != 0 or any -errno) changed nothing, Dispatch gives a
// reason exactly when it refuses, and the global invariants of fuzz_vm.h hold.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/fuzz_vm.h"

namespace minivmm::fuzz {
namespace {

void CheckCall(FuzzVm& vm, const Snapshot& before, uint64_t nr, const HypercallArgs& args,
               int64_t r, int cpl) {
  FUZZ_CHECK(IsValidResult(r));
  if (cpl != 0) FUZZ_CHECK(r == -MVMM_EPERM);
  if (r < 0) FUZZ_CHECK(before.Same(vm));  // a refused call changes nothing
  if (r >= 0) {
    switch (nr & 0xFFFFFFFFu) {
      case MVMM_HC_console_io:
        FUZZ_CHECK(static_cast<uint64_t>(r) == args[1]);
        FUZZ_CHECK(vm.console.total == before.console_total + args[1]);
        if (args[1] > 0) {  // the console keeps at least the last write
          const std::string& out = vm.console.out;
          FUZZ_CHECK(out.size() >= args[1]);
          FUZZ_CHECK(std::memcmp(out.data() + out.size() - args[1], vm.ram.data() + args[2],
                                 args[1]) == 0);
        }
        break;
      case MVMM_HC_update_descriptor: {
        const uint64_t offset = args[0] - MVMM_GDT_GPA;
        FUZZ_CHECK(offset / MVMM_GDT_STRIDE < vm.cpus.count());
        FUZZ_CHECK(IsTlsSlot(offset % MVMM_GDT_STRIDE / 8));
        uint64_t stored;
        // Safety: an applied update_descriptor wrote this TLS slot, so it is inside vm.gdt.
        std::memcpy(&stored, vm.gdt.data() + offset, 8);
        FUZZ_CHECK(stored == TlsDescriptorToStore(args[1]));
        break;
      }
      case MVMM_HC_mmu_update:
        FUZZ_CHECK(static_cast<uint64_t>(r) <= args[1]);
        break;
      case MVMM_HC_mmuext_op: {
        // All or nothing: every op ran, so CR3 holds the last op's frame;
        // an empty batch changes nothing.
        FUZZ_CHECK(static_cast<uint64_t>(r) == args[1]);
        if (args[1] == 0) {
          FUZZ_CHECK(vm.vcpu.cr3 == before.cr3);
          break;
        }
        mvmm_mmuext_op last;
        // Safety: the handler read the whole list from RAM, which it does
        // not write, so the last op is still there.
        std::memcpy(&last, vm.ram.data() + args[0] + (args[1] - 1) * sizeof(last), sizeof(last));
        FUZZ_CHECK(vm.vcpu.cr3 == last.arg1 << 12);
        break;
      }
      case MVMM_HC_set_if:
        FUZZ_CHECK(r == 0 || r == 1);
        FUZZ_CHECK(((vm.vcpu.regs[static_cast<int>(Reg::kRflags)] & MVMM_RFLAGS_IF) != 0) ==
                   (args[0] == 1));
        break;
      case MVMM_HC_vcpu_op:
        // Registered exactly what was asked, once: a vcpu_info with nothing
        // held back, or a run-state area that says the vCPU runs; or set
        // the caller's own periodic timer.
        if (args[0] == MVMM_VCPUOP_REGISTER_VCPU_INFO) {
          FUZZ_CHECK(!before.vcpu_info_gpa.has_value());
          FUZZ_CHECK(vm.control.vcpu_info_gpa == std::optional<uint64_t>(args[2]));
          FUZZ_CHECK(vm.ram[args[2] + offsetof(mvmm_vcpu_info, evtchn_upcall_pending)] == 0);
        } else if (args[0] == MVMM_VCPUOP_SET_PERIODIC_TIMER ||
                   args[0] == MVMM_VCPUOP_STOP_PERIODIC_TIMER) {
          // The caller's own periodic timer, set to a period in range or
          // stopped, and nothing else.
          const bool set = args[0] == MVMM_VCPUOP_SET_PERIODIC_TIMER;
          FUZZ_CHECK(args[1] == vm.exit.vcpu_id);
          if (set)
            FUZZ_CHECK(args[2] >= MVMM_PERIODIC_TIMER_MIN_NS &&
                       args[2] <= MVMM_PERIODIC_TIMER_MAX_NS);
          FUZZ_CHECK(vm.timer.armed.size() + vm.timer.periods.size() == before.timer_sets + 1);
          FUZZ_CHECK(vm.timer.periods.back() ==
                     (testing::RecordingTimer::Period{vm.exit.vcpu_id, set ? args[2] : 0}));
          FUZZ_CHECK(
              std::equal(before.ram.begin(), before.ram.end(), vm.ram.begin(), vm.ram.end()));
        } else {
          FUZZ_CHECK(args[0] == MVMM_VCPUOP_REGISTER_RUNSTATE_AREA);
          FUZZ_CHECK(vm.control.runstate_gpa == std::optional<uint64_t>(args[2]));
          uint32_t state;
          // Safety: an accepted area lies inside RAM; the state field is its first 4 bytes.
          std::memcpy(&state, vm.ram.data() + args[2] + offsetof(mvmm_vcpu_runstate, state), 4);
          FUZZ_CHECK(state == MVMM_RUNSTATE_RUNNING);
          uint32_t flags;
          // Safety: as above; flags are the next 4 bytes of the 8-byte area.
          std::memcpy(&flags, vm.ram.data() + args[2] + offsetof(mvmm_vcpu_runstate, flags), 4);
          FUZZ_CHECK(flags == 0);
        }
        break;
      case MVMM_HC_send_ipi: {
        // Exactly one IPI to each vCPU in the mask, lowest first, and
        // nothing else (no memory, no run-state flag).
        FUZZ_CHECK(args[1] == MVMM_IPI_VECTOR);
        FUZZ_CHECK(static_cast<uint64_t>(r) == static_cast<uint64_t>(std::popcount(args[0])));
        FUZZ_CHECK(vm.cpus.sent.size() == before.ipis_sent + static_cast<size_t>(r));
        uint64_t mask = args[0];
        for (size_t i = before.ipis_sent; i < vm.cpus.sent.size(); ++i, mask &= mask - 1)
          FUZZ_CHECK(vm.cpus.sent[i].to == static_cast<uint32_t>(std::countr_zero(mask)));
        FUZZ_CHECK(std::equal(before.ram.begin(), before.ram.end(), vm.ram.begin(), vm.ram.end()));
        break;
      }
      case MVMM_HC_flush_tlb_others: {
        // Never the caller; every target flagged; exactly the running ones
        // kicked, which the result counts.
        FUZZ_CHECK((args[0] >> vm.exit.vcpu_id & 1) == 0);
        uint64_t kicked = 0;
        for (uint64_t mask = args[0]; mask != 0; mask &= mask - 1) {
          const auto cpu = static_cast<uint32_t>(std::countr_zero(mask));
          FUZZ_CHECK(cpu < vm.cpus.cpus && vm.cpus.runstate[cpu].has_value());
          uint32_t flags;
          // Safety: an accepted target's area is 8-aligned and inside RAM.
          std::memcpy(&flags,
                      vm.ram.data() + *vm.cpus.runstate[cpu] + offsetof(mvmm_vcpu_runstate, flags),
                      4);
          FUZZ_CHECK((flags & MVMM_RUNSTATE_FLUSH_TLB) != 0);
          if (!vm.cpus.blocked[cpu]) ++kicked;
        }
        FUZZ_CHECK(static_cast<uint64_t>(r) == kicked);
        FUZZ_CHECK(vm.cpus.sent.size() == before.ipis_sent + kicked);
        break;
      }
      case MVMM_HC_force_evtchn_callback:
        FUZZ_CHECK(r == 0 && vm.control.vcpu_info_gpa.has_value() && before.Same(vm));
        break;
      case MVMM_HC_lock_wait:
        // The word differed (CHANGED, nothing asked) or the wait is left to
        // the run loop (KICKED until it writes the outcome); memory untouched.
        FUZZ_CHECK(args[0] % 4 == 0 && args[1] <= UINT32_MAX);
        FUZZ_CHECK(r == MVMM_LOCK_WAIT_CHANGED || r == MVMM_LOCK_WAIT_KICKED);
        FUZZ_CHECK(r == MVMM_LOCK_WAIT_CHANGED ? vm.control.request == before.request
                                               : vm.control.request == VcpuRequest::kLockWait ||
                                                     before.request == VcpuRequest::kShutdown);
        FUZZ_CHECK(std::equal(before.ram.begin(), before.ram.end(), vm.ram.begin(), vm.ram.end()));
        break;
      case MVMM_HC_lock_kick:
        // Exactly one kick, to another vCPU the VM has.
        FUZZ_CHECK(r == 0 && args[0] < vm.cpus.cpus && args[0] != vm.exit.vcpu_id);
        FUZZ_CHECK(vm.cpus.kicks.size() == before.kicks_sent + 1);
        FUZZ_CHECK(vm.cpus.kicks.back().to == args[0]);
        break;
      default:
        break;
    }
  }
  CheckGlobalInvariants(vm);
}

void Run(Input& in) {
  FuzzVm vm(in);
  HypercallEnv& env = vm.env;
  static auto* snapshot = new Snapshot;
  Snapshot& before = *snapshot;
  int calls = 0;
  while (!in.empty() && calls < 32) {
    const uint8_t kind = in.U8();
    if (kind % 4 == 0) {
      vm.Poke(in);
      continue;
    }
    ++calls;
    const uint8_t cpl_byte = kind % 4 == 2 ? 0 : in.U8();
    const int cpl = cpl_byte % 8 == 7 ? cpl_byte / 8 % 4 : 0;
    const uint64_t rax = kind % 4 == 3 ? in.U64() : vm.Number(in);
    HypercallArgs args;
    for (uint64_t& a : args) a = vm.Arg(in);
    before.Take(vm);
    int64_t r;
    if (kind % 4 == 2) {
      const HypercallResult result = vm.dispatcher.Dispatch(env, rax, args, /*direct=*/false);
      FUZZ_CHECK((result.refusal != nullptr) == !result.ok());
      r = result.value;
      if (rax == MVMM_HC_multicall) FUZZ_CHECK(r == -MVMM_EINVAL);  // never nested
    } else {
      vm.vcpu.cpl = cpl;
      vm.SetHypercallRegs(rax, args);
      r = vm.dispatcher.HandleExit(env);
      FUZZ_CHECK(vm.vcpu.Get(Reg::kRax) == static_cast<uint64_t>(r));
      // Snapshot compares RAX-free state; RAX is the one register written.
    }
    CheckCall(vm, before, rax, args, r, kind % 4 == 2 ? 0 : cpl);
  }
}

}  // namespace
}  // namespace minivmm::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  minivmm::fuzz::Input in(data, size);
  minivmm::fuzz::Run(in);
  return 0;
}
