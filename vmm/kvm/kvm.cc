#include "vmm/kvm/kvm.h"

#include <fcntl.h>
#include <linux/kvm.h>
#include <sys/ioctl.h>

#include "absl/strings/str_format.h"
#include <cstring>
#include <utility>

#include "vmm/core/status_macros.h"
#include "vmm/kvm/flex_ioctls.h"
#include "vmm/kvm/kvm_error.h"

namespace minivmm {
namespace {

struct CapabilitySpec {
  const char* name;
  long id;
  bool required;
};

constexpr CapabilitySpec kCapabilities[] = {
    {"KVM_CAP_USER_MEMORY", KVM_CAP_USER_MEMORY, true},
    {"KVM_CAP_SYNC_REGS", KVM_CAP_SYNC_REGS, true},
    {"KVM_CAP_READONLY_MEM", KVM_CAP_READONLY_MEM, true},
    {"KVM_CAP_IMMEDIATE_EXIT", KVM_CAP_IMMEDIATE_EXIT, true},
    {"KVM_CAP_EXT_CPUID", KVM_CAP_EXT_CPUID, true},
    {"KVM_CAP_BINARY_STATS_FD", KVM_CAP_BINARY_STATS_FD, false},
    {"KVM_CAP_SET_TSS_ADDR", KVM_CAP_SET_TSS_ADDR, false},
    {"KVM_CAP_NR_MEMSLOTS", KVM_CAP_NR_MEMSLOTS, false},
    {"KVM_CAP_MAX_VCPUS", KVM_CAP_MAX_VCPUS, false},
    // What the PC machines need beyond the built-in one (docs/machines.md):
    // pc's irqchip and PIT, q35's split irqchip and MSIs, the TSC-deadline
    // bit, Hyper-V's enlightenments and hyperv-testdev's in-kernel events.
    {"KVM_CAP_IRQCHIP", KVM_CAP_IRQCHIP, false},
    {"KVM_CAP_PIT2", KVM_CAP_PIT2, false},
    {"KVM_CAP_SPLIT_IRQCHIP", KVM_CAP_SPLIT_IRQCHIP, false},
    {"KVM_CAP_SIGNAL_MSI", KVM_CAP_SIGNAL_MSI, false},
    {"KVM_CAP_TSC_DEADLINE_TIMER", KVM_CAP_TSC_DEADLINE_TIMER, false},
    {"KVM_CAP_SYS_HYPERV_CPUID", KVM_CAP_SYS_HYPERV_CPUID, false},
    {"KVM_CAP_HYPERV_SYNIC2", KVM_CAP_HYPERV_SYNIC2, false},
    {"KVM_CAP_HYPERV_EVENTFD", KVM_CAP_HYPERV_EVENTFD, false},
};

}  // namespace

absl::StatusOr<KvmSystem> KvmSystem::Open(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return KvmError(absl::StrFormat("open(%s)", path));
  Fd owned(fd);
  int version = ioctl(fd, KVM_GET_API_VERSION, 0);
  if (version < 0) return KvmError("KVM_GET_API_VERSION");
  if (version != KVM_API_VERSION)
    return absl::FailedPreconditionError(
        absl::StrFormat("%s speaks KVM API %d, minivmm needs %d", path, version, KVM_API_VERSION));
  return KvmSystem(std::move(owned), version);
}

std::vector<KvmCapability> KvmSystem::Capabilities() const {
  std::vector<KvmCapability> out;
  for (const CapabilitySpec& cap : kCapabilities) {
    int value = ioctl(fd_.get(), KVM_CHECK_EXTENSION, cap.id);
    out.push_back({cap.name, value < 0 ? 0 : value, cap.required});
  }
  return out;
}

absl::Status KvmSystem::CheckRequiredCapabilities() const {
  for (const KvmCapability& cap : Capabilities()) {
    if (cap.required && cap.value == 0)
      return absl::FailedPreconditionError(absl::StrFormat("this host's KVM lacks %s", cap.name));
  }
  // Sync regs must cover general and special registers.
  int sync = ioctl(fd_.get(), KVM_CHECK_EXTENSION, KVM_CAP_SYNC_REGS);
  constexpr int kNeeded = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
  if ((sync & kNeeded) != kNeeded)
    return absl::FailedPreconditionError("KVM_CAP_SYNC_REGS does not cover regs and sregs");
  return absl::OkStatus();
}

absl::StatusOr<KvmVm> KvmVm::Create(const KvmSystem& kvm) {
  int fd = ioctl(kvm.fd(), KVM_CREATE_VM, 0);
  if (fd < 0) return KvmError("KVM_CREATE_VM");
  Fd owned(fd);
  // Intel needs a 3-page TSS region below 4 GiB for real-mode emulation;
  // put it at the top of the 32-bit space, away from RAM and the GDT.
  if (ioctl(fd, KVM_CHECK_EXTENSION, KVM_CAP_SET_TSS_ADDR) > 0 &&
      ioctl(fd, KVM_SET_TSS_ADDR, 0xfffbd000ul) < 0)
    return KvmError("KVM_SET_TSS_ADDR");
  return KvmVm(std::move(owned));
}

absl::Status KvmVm::SetMemoryRegion(uint32_t slot, uint64_t gpa, uint64_t size, void* host,
                                    bool read_only) {
  kvm_userspace_memory_region region{};
  region.slot = slot;
  region.flags = read_only ? KVM_MEM_READONLY : 0;
  region.guest_phys_addr = gpa;
  region.memory_size = size;
  region.userspace_addr = reinterpret_cast<uint64_t>(host);
  if (ioctl(fd_.get(), KVM_SET_USER_MEMORY_REGION, &region) < 0)
    return KvmError(absl::StrFormat("KVM_SET_USER_MEMORY_REGION(slot %u)", slot));
  return absl::OkStatus();
}

namespace {

absl::Status NeedExtension(int vm_fd, long cap, const char* name, const char* what) {
  if (ioctl(vm_fd, KVM_CHECK_EXTENSION, cap) > 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrFormat("this host's KVM lacks %s (%s)", name, what));
}

}  // namespace

absl::Status KvmSystem::NeedHyperv() const {
  RETURN_IF_ERROR(NeedExtension(fd_.get(), KVM_CAP_SYS_HYPERV_CPUID, "KVM_CAP_SYS_HYPERV_CPUID",
                                "Hyper-V's CPUID leaves"));
  return NeedExtension(fd_.get(), KVM_CAP_HYPERV_SYNIC2, "KVM_CAP_HYPERV_SYNIC2",
                       "Hyper-V's SynIC");
}

absl::Status KvmVm::CreateIrqchip() {
  RETURN_IF_ERROR(NeedExtension(fd_.get(), KVM_CAP_IRQCHIP, "KVM_CAP_IRQCHIP",
                                "an in-kernel local APIC, IOAPIC and PIC"));
  if (ioctl(fd_.get(), KVM_CREATE_IRQCHIP, 0) < 0) return KvmError("KVM_CREATE_IRQCHIP");
  return absl::OkStatus();
}

absl::Status KvmVm::CreateSplitIrqchip(uint32_t ioapic_pins) {
  RETURN_IF_ERROR(NeedExtension(fd_.get(), KVM_CAP_SPLIT_IRQCHIP, "KVM_CAP_SPLIT_IRQCHIP",
                                "in-kernel local APICs with the IOAPIC in the VMM"));
  RETURN_IF_ERROR(
      NeedExtension(fd_.get(), KVM_CAP_SIGNAL_MSI, "KVM_CAP_SIGNAL_MSI", "MSIs from the VMM"));
  kvm_enable_cap cap{};
  cap.cap = KVM_CAP_SPLIT_IRQCHIP;
  cap.args[0] = ioapic_pins;
  if (ioctl(fd_.get(), KVM_ENABLE_CAP, &cap) < 0)
    return KvmError("KVM_ENABLE_CAP(KVM_CAP_SPLIT_IRQCHIP)");
  return absl::OkStatus();
}

absl::StatusOr<bool> KvmVm::SignalMsi(uint64_t address, uint32_t data) {
  kvm_msi msi{};
  msi.address_lo = static_cast<uint32_t>(address);
  msi.address_hi = static_cast<uint32_t>(address >> 32);
  msi.data = data;
  const int delivered = ioctl(fd_.get(), KVM_SIGNAL_MSI, &msi);
  if (delivered < 0) return KvmError("KVM_SIGNAL_MSI");
  return delivered > 0;
}

absl::Status KvmVm::SetMsiRoutes(std::span<const MsiRoute> routes) {
  std::vector<kvm_irq_routing_entry> entries;
  entries.reserve(routes.size());
  for (const MsiRoute& r : routes) {
    kvm_irq_routing_entry e{};
    e.gsi = r.gsi;
    e.type = KVM_IRQ_ROUTING_MSI;
    e.u.msi.address_lo = static_cast<uint32_t>(r.address);
    e.u.msi.address_hi = static_cast<uint32_t>(r.address >> 32);
    e.u.msi.data = r.data;
    entries.push_back(e);
  }
  return SetGsiRouting(entries);
}

std::vector<kvm_irq_routing_entry> KvmVm::PcIsaRoutes() {
  std::vector<kvm_irq_routing_entry> routes;
  auto route = [&routes](uint32_t gsi, uint32_t chip, uint32_t pin) {
    kvm_irq_routing_entry e{};
    e.gsi = gsi;
    e.type = KVM_IRQ_ROUTING_IRQCHIP;
    e.u.irqchip.irqchip = chip;
    e.u.irqchip.pin = pin;
    routes.push_back(e);
  };
  for (uint32_t gsi = 0; gsi < 16; ++gsi) {
    if (gsi != 2) route(gsi, gsi < 8 ? KVM_IRQCHIP_PIC_MASTER : KVM_IRQCHIP_PIC_SLAVE, gsi % 8);
  }
  for (uint32_t gsi = 0; gsi < 24; ++gsi) {
    if (gsi != 2) route(gsi, KVM_IRQCHIP_IOAPIC, gsi == 0 ? 2 : gsi);
  }
  return routes;
}

absl::Status KvmVm::RouteIsaIrqsAsPc() { return SetGsiRouting(PcIsaRoutes()); }

absl::Status KvmVm::SetGsiRouting(std::span<const kvm_irq_routing_entry> routes) {
  // kvm_irq_routing laid out by hand: see flex_ioctls.h.
  std::vector<uint8_t> buffer(kKvmIrqRoutingHeaderBytes +
                              routes.size() * sizeof(kvm_irq_routing_entry));
  const uint32_t nr = static_cast<uint32_t>(routes.size());
  std::memcpy(buffer.data(), &nr, sizeof(nr));
  if (!routes.empty())
    std::memcpy(buffer.data() + kKvmIrqRoutingHeaderBytes, routes.data(),
                routes.size() * sizeof(kvm_irq_routing_entry));
  if (ioctl(fd_.get(), kKvmSetGsiRouting, buffer.data()) < 0)
    return KvmError("KVM_SET_GSI_ROUTING");
  return absl::OkStatus();
}

absl::Status KvmVm::AssignResampleIrqfd(uint32_t gsi, int fd, int resample_fd) {
  kvm_irqfd irqfd{};
  irqfd.fd = static_cast<uint32_t>(fd);
  irqfd.gsi = gsi;
  irqfd.flags = KVM_IRQFD_FLAG_RESAMPLE;
  irqfd.resamplefd = static_cast<uint32_t>(resample_fd);
  if (ioctl(fd_.get(), KVM_IRQFD, &irqfd) < 0)
    return KvmError(absl::StrFormat("KVM_IRQFD(gsi %u, resample)", gsi));
  return absl::OkStatus();
}

bool KvmVm::HasHypervEventfd() const {
  return ioctl(fd_.get(), KVM_CHECK_EXTENSION, KVM_CAP_HYPERV_EVENTFD) > 0;
}

absl::Status KvmVm::SetHypervEventfd(uint32_t conn_id, int fd) {
  kvm_hyperv_eventfd e{};
  e.conn_id = conn_id;
  e.fd = fd;
  e.flags = fd < 0 ? KVM_HYPERV_EVENTFD_DEASSIGN : 0;
  if (ioctl(fd_.get(), KVM_HYPERV_EVENTFD, &e) < 0)
    return KvmError(absl::StrFormat("KVM_HYPERV_EVENTFD(connection 0x%x)", conn_id));
  return absl::OkStatus();
}

absl::Status KvmVm::DeassignIrqfd(uint32_t gsi, int fd) {
  kvm_irqfd irqfd{};
  irqfd.fd = static_cast<uint32_t>(fd);
  irqfd.gsi = gsi;
  irqfd.flags = KVM_IRQFD_FLAG_DEASSIGN;
  if (ioctl(fd_.get(), KVM_IRQFD, &irqfd) < 0)
    return KvmError(absl::StrFormat("KVM_IRQFD(gsi %u, deassign)", gsi));
  return absl::OkStatus();
}

absl::Status KvmVm::CreatePit() {
  RETURN_IF_ERROR(NeedExtension(fd_.get(), KVM_CAP_PIT2, "KVM_CAP_PIT2", "an in-kernel PIT"));
  kvm_pit_config config{};
  if (ioctl(fd_.get(), KVM_CREATE_PIT2, &config) < 0) return KvmError("KVM_CREATE_PIT2");
  return absl::OkStatus();
}

absl::Status KvmVm::ProgramPics(KvmPicProgram master, KvmPicProgram slave) {
  for (const auto& [id, program] : {std::pair{KVM_IRQCHIP_PIC_MASTER, master},
                                    std::pair{KVM_IRQCHIP_PIC_SLAVE, slave}}) {
    kvm_irqchip chip{};
    chip.chip_id = id;
    if (ioctl(fd_.get(), KVM_GET_IRQCHIP, &chip) < 0) return KvmError("KVM_GET_IRQCHIP");
    kvm_pic_state& pic = chip.chip.pic;
    pic.irq_base = program.vector_base;  // ICW2
    pic.init4 = 1;                       // ICW1 0x11 announced ICW4 (8086 mode)
    pic.init_state = 0;                  // the sequence is complete
    pic.imr = program.mask;              // OCW1
    pic.irr = pic.isr = pic.last_irr = 0;
    pic.read_reg_select = 0;  // OCW3 reads IRR
    pic.auto_eoi = pic.rotate_on_auto_eoi = pic.special_fully_nested_mode = 0;
    pic.priority_add = pic.special_mask = pic.poll = 0;
    if (ioctl(fd_.get(), KVM_SET_IRQCHIP, &chip) < 0) return KvmError("KVM_SET_IRQCHIP");
  }
  return absl::OkStatus();
}

absl::Status KvmVm::ProgramPitChannel0(uint8_t mode, uint16_t count) {
  kvm_pit_state2 pit{};
  if (ioctl(fd_.get(), KVM_GET_PIT2, &pit) < 0) return KvmError("KVM_GET_PIT2");
  kvm_pit_channel_state& channel = pit.channels[0];
  // The control word: lo/hi access (KVM's RW_STATE_WORD0 = 3), binary.
  constexpr uint8_t kLoHi = 3;
  channel.mode = mode;
  channel.bcd = 0;
  channel.rw_mode = channel.read_state = channel.write_state = kLoHi;
  channel.count_latched = channel.status_latched = 0;
  channel.gate = 1;
  channel.count = count;  // KVM loads 0 as 65536, and starts channel 0 on it
  if (ioctl(fd_.get(), KVM_SET_PIT2, &pit) < 0) return KvmError("KVM_SET_PIT2");
  return absl::OkStatus();
}

bool KvmVm::HasTscDeadlineTimer() const {
  return ioctl(fd_.get(), KVM_CHECK_EXTENSION, KVM_CAP_TSC_DEADLINE_TIMER) > 0;
}

absl::Status KvmVm::SetIrqLine(uint32_t irq, bool level) {
  kvm_irq_level line{};
  line.irq = irq;
  line.level = level ? 1 : 0;
  if (ioctl(fd_.get(), KVM_IRQ_LINE, &line) < 0)
    return KvmError(absl::StrFormat("KVM_IRQ_LINE(%u)", irq));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<KvmVcpu>> KvmVm::CreateVcpu(const KvmSystem& kvm, int id) {
  int fd = ioctl(fd_.get(), KVM_CREATE_VCPU, id);
  if (fd < 0) return KvmError("KVM_CREATE_VCPU");
  return KvmVcpu::Create(kvm.fd(), fd, id);
}

}  // namespace minivmm
