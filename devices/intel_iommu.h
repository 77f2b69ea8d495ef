// An emulated Intel VT-d remapping unit (DMA remapping, interrupt remapping
// and queued invalidation), as QEMU's `-device intel-iommu,intremap=on,eim=off`
// presents it (hw/i386/intel_iommu.c) to kvm-unit-tests' x86/intel-iommu.c
// and to Linux; behaviour follows the VT-d specification where QEMU is silent
// or aborts. One 4 KiB MMIO page at 0xFED90000 (q35's DMAR unit address).
//
// Registers (offsets; 64-bit ones may also be accessed as two aligned 32-bit
// halves, and any aligned 8-byte access acts as two 4-byte accesses, low
// first; any other size or a misaligned access reads 0, is not written, and
// counts in ignored_accesses, as does a write where nothing is writable):
//   VER    0x00  0x10 (version 1.0).
//   CAP    0x08  ND=2, SAGAW=39-bit (3-level) only, MGAW=38, FRO=0x22 (the one
//                fault recording register at 0x220, NFR=0), SLLPS 2 MiB and
//                1 GiB, PSI, MAMV=0x12. Read-only.
//   ECAP   0x10  QI, IR, IRO=0xF (IVA at 0xF0, IOTLB at 0xF8). No EIM, PT,
//                device-IOTLB, snoop control or scalable mode. Read-only.
//   GCMD   0x18  write-only (reads 0), handled as QEMU's vtd_handle_gcmd_write:
//                the guest writes GSTS | one new bit. TE (31), QIE (26), IRE
//                (25) and CFI (23) act when they differ from GSTS and GSTS
//                follows; SRTP (30) latches RTADDR as the active root table
//                each time it is written 1 and sets RTPS for good; SIRTP (24)
//                latches IRTA likewise and sets IRTPS. QIE on resets the head
//                to 0 and latches IQA; QIE off is refused while IQH != IQT.
//                WBF and SFL do nothing (no write buffer, no fault log).
//   GSTS   0x1C  read-only status of the above.
//   RTADDR 0x20  root table address, bits 63:12. Bit 11 (RTT, scalable mode)
//                is not offered: a root table latched with it makes every
//                translation fault 0x8 (counted in unsupported_settings).
//   CCMD   0x28  a write of the high half with ICC (63) set completes at once
//                (nothing is cached): ICC reads back clear and CAIG (60:59)
//                = CIRG (62:61).
//   FSTS   0x34  PFO (0, RW1C), PPF (1, read-only: the fault recording
//                register holds a fault), IQE (4, RW1C), ICE (5), ITE (6,
//                RW1C), FRI (15:8, always 0).
//   FECTL  0x38  IM (31, RW, set at reset), IP (30, read-only).
//   FEDATA 0x3C, FEADDR 0x40, FEUADDR 0x44: the fault event MSI.
//   IQH    0x80  read-only, bits 18:4 = the next descriptor's index.
//   IQT    0x88  bits 18:4; a write with QIE on processes the queue.
//   IQA    0x90  base (63:12), QS (2:0): 2^QS pages of 256 16-byte descriptors.
//                Bit 11 (DW, 256-bit descriptors) is not offered: ignored and
//                counted in unsupported_settings when latched.
//   ICS    0x9C  IWC (0, RW1C; clearing it clears IECTL.IP).
//   IECTL  0xA0  IM (31, RW, set at reset), IP (30, read-only).
//   IEDATA 0xA4, IEADDR 0xA8, IEUADDR 0xAC: the invalidation completion MSI.
//   IRTA   0xB8  interrupt remapping table: base (63:12), S (3:0): 2^(S+1)
//                16-byte entries. EIME (11) is not offered: treated as 0 and
//                counted in unsupported_settings when latched.
//   IVA    0xF0, IOTLB 0xF8: a write of IOTLB's high half with IVT (63) set
//                completes at once: IVT reads back clear, IAIG (58:57) =
//                IIRG (61:60).
//   FRCD   0x220 the fault recording register (128 bits): low qword bits
//                63:12 the faulting page (interrupt faults: bits 63:48 the
//                interrupt index); high qword SID (15:0), FR (39:32), T (62,
//                1 = read), F (63, RW1C). Everything else reads 0.
//
// Faults. Every DMA or interrupt fault is counted (dma_faults,
// interrupt_faults). It is recorded in FRCD unless it came through a context
// entry or IRTE with FPD set, or FSTS.PFO is set; if FRCD.F is already set
// the fault is dropped and PFO set instead. A fault recorded while FSTS had
// none of PPF, PFO and IQE pending raises a fault event: FEDATA is sent at
// FEUADDR:FEADDR (SourceId nullopt) when FECTL.IM is clear, otherwise
// FECTL.IP is set and the event is sent when the guest clears IM. An
// invalidation queue error raises one the same way. FECTL.IP clears when
// PPF, PFO and IQE all are clear. Fault reasons: 0x1 root entry not present,
// 0x2 context entry not present, 0x3 invalid context entry (AW != 1, TT != 0
// since neither pass-through nor device-IOTLB is offered, or reserved bits
// set), 0x4 address at or beyond 2^39, 0x5 write without W at some level,
// 0x6 read without R at some level, 0x7 a paging entry not in RAM, 0x8 root
// entry not in RAM (or RTT latched), 0x9 context entry not in RAM; 0x20
// reserved bits in the request (SHV with data bits 31:16 set), 0x21 index
// beyond the table, 0x22 IRTE not present, 0x23 IRTE not in RAM, 0x24
// reserved bits, posted mode (IM) or SVT=3 in the IRTE, 0x25 compatibility
// format while GSTS.CFIS is clear, 0x26 source-id verification failed.
//
// DMA remapping (DmaSpace, source_id = bus << 8 | devfn): with TES clear,
// straight to guest RAM. With TES set, every access walks root entry
// (root + bus * 16), context entry (context table + devfn * 16) and a
// 3-level second-level table (9 index bits a level over IOVA bits 38:12; R
// bit 0, W bit 1, PS bit 7 ends the walk at level 2 or 3 with a 2 MiB or
// 1 GiB page), reading every table from guest RAM; nothing is cached, so the
// invalidations are complete when issued. A request translates page by page
// first and then copies: a Write writes nothing unless every byte translates
// to RAM. One fault is recorded for a failing request (its first failing
// page). A translation to an address that is not RAM is no IOMMU fault (as in
// QEMU, the access just fails): counted in dma_not_ram.
//
// Interrupt remapping (MsiSink): with IRES clear, every MSI goes downstream
// unchanged. With IRES set, an address outside 0xFEExxxxx is dropped and
// counted (dropped_interrupts); a compatibility-format MSI (address bit 4
// clear) goes downstream unchanged when CFIS is set, else faults 0x25; a
// remappable one takes handle = address bits 19:5 | bit 2 << 15 (+ data bits
// 15:0 with SHV, bit 3) as its IRTE index, and is sent downstream as the
// xAPIC-format MSI its IRTE describes: address 0xFEE00000 | (destination
// bits 15:8) << 12 | RH << 3 | DM << 2, data vector | DLM << 8 | TM << 15 |
// TM << 14. The IRTE's SID check (SVT 1: SID under the SQ mask; 2: the
// source's bus within [SID 15:8, SID 7:0]) applies when the message has a
// source; the IOAPIC's (nullopt) are not checked, as in QEMU, and their
// faults record SID 0xFFFF (QEMU's X86_IOMMU_SID_INVALID).
//
// Queued invalidation: descriptor types 1 (context cache), 2 (IOTLB), 3
// (device-IOTLB) and 4 (interrupt entry cache) complete at once; type 5
// (wait) writes its status dword at the high qword's bits 63:2 when SW (bit
// 5) is set, and with IF (bit 4) sets ICS.IWC and, unless IWC was already
// set, sends IEDATA at IEUADDR:IEADDR (or sets IECTL.IP when IECTL.IM is
// set). An unknown type, a descriptor or status address not in RAM, or a
// tail beyond the queue sets FSTS.IQE and stops with IQH at the bad
// descriptor; while IQE is set, IQT writes only store the tail.
//
// All guest-supplied values are untrusted: nothing here aborts on them.
// Not thread-safe: every call comes under the run loop's lock, one at a time.
#ifndef MINIVMM_DEVICES_INTEL_IOMMU_H_
#define MINIVMM_DEVICES_INTEL_IOMMU_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "devices/dma.h"
#include "devices/msi.h"
#include "minivmm/guest_memory.h"
#include "minivmm/io_device.h"

namespace minivmm {

class IntelIommu final : public IoDevice, public MsiSink, public DmaSpace {
 public:
  static constexpr uint64_t kMmioBase = 0xFED90000;  // register on the MMIO bus here
  static constexpr uint64_t kIoSize = 0x1000;        // ... with this length

  // Register offsets.
  static constexpr uint64_t kVer = 0x00, kCap = 0x08, kEcap = 0x10, kGcmd = 0x18, kGsts = 0x1C;
  static constexpr uint64_t kRtaddr = 0x20, kCcmd = 0x28, kFsts = 0x34, kFectl = 0x38;
  static constexpr uint64_t kFedata = 0x3C, kFeaddr = 0x40, kFeuaddr = 0x44;
  static constexpr uint64_t kIqh = 0x80, kIqt = 0x88, kIqa = 0x90, kIcs = 0x9C;
  static constexpr uint64_t kIectl = 0xA0, kIedata = 0xA4, kIeaddr = 0xA8, kIeuaddr = 0xAC;
  static constexpr uint64_t kIrta = 0xB8, kIva = 0xF0, kIotlb = 0xF8, kFrcd = 0x220;

  // GCMD/GSTS bits (the command bit and its status bit are the same).
  static constexpr uint32_t kTe = 1u << 31, kSrtp = 1u << 30, kWbf = 1u << 27, kQie = 1u << 26;
  static constexpr uint32_t kIre = 1u << 25, kSirtp = 1u << 24, kCfi = 1u << 23;

  // Fault reasons (VT-d spec, appendix A).
  enum class Fault : uint8_t {
    kRootNotPresent = 0x1,
    kContextNotPresent = 0x2,
    kContextInvalid = 0x3,
    kAddressBeyondMgaw = 0x4,
    kWrite = 0x5,
    kRead = 0x6,
    kPagingEntryNotRam = 0x7,
    kRootTableNotRam = 0x8,
    kContextTableNotRam = 0x9,
    kIrRequestReserved = 0x20,
    kIrIndexBeyondSize = 0x21,
    kIrteNotPresent = 0x22,
    kIrteNotRam = 0x23,
    kIrteReserved = 0x24,
    kIrCompatBlocked = 0x25,
    kIrSidMismatch = 0x26,
  };

  // `memory` (guest RAM: the tables, DMA, wait status writes) and
  // `downstream` (remapped interrupts, fault and completion events) are not
  // owned and must outlive this.
  IntelIommu(const GuestMemory* memory, MsiSink* downstream)
      : memory_(memory), downstream_(downstream) {}

  std::string_view Name() const override { return "intel-iommu"; }
  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  void SendMsi(const MsiMessage& msi, SourceId source) override;

  bool Read(uint16_t source_id, uint64_t address, std::span<uint8_t> out) override;
  bool Write(uint16_t source_id, uint64_t address, std::span<const uint8_t> in) override;

  // What `msi` from `source` becomes now, as SendMsi would send it, without
  // recording a fault or counting anything: nullopt where SendMsi would
  // refuse or drop it. For a machine that keeps copies of remapped messages
  // (KVM's GSI routes for the IOAPIC's pins).
  std::optional<MsiMessage> RemapQuietly(const MsiMessage& msi, SourceId source) const;
  // Called after anything that may change what RemapQuietly answers: SIRTP,
  // IRE or CFI toggled, an interrupt-entry-cache invalidation descriptor
  // (the guest's promise that it changed IRTEs). Under the same lock as the
  // register write that causes it; it must not call back into this device's
  // registers.
  void OnInterruptRemappingChanged(std::function<void()> callback) {
    remapping_changed_ = std::move(callback);
  }

  // Counters for the machine's notes.
  uint64_t dma_faults() const { return dma_faults_; }  // recorded or not
  uint64_t interrupt_faults() const { return interrupt_faults_; }
  uint64_t recorded_faults() const { return recorded_faults_; }      // put in FRCD
  uint64_t overflowed_faults() const { return overflowed_faults_; }  // dropped, PFO
  uint64_t dma_not_ram() const { return dma_not_ram_; }
  uint64_t remapped_interrupts() const { return remapped_interrupts_; }
  uint64_t dropped_interrupts() const { return dropped_interrupts_; }  // not 0xFEExxxxx
  uint64_t descriptors_done() const { return descriptors_done_; }
  uint64_t queue_errors() const { return queue_errors_; }  // times IQE was set
  uint64_t ignored_accesses() const { return ignored_accesses_; }
  uint64_t unsupported_settings() const { return unsupported_settings_; }  // RTT, DW, EIME
  // The first fault of any kind, in words ("" before any).
  const std::string& first_fault() const { return first_fault_; }

 private:
  struct Entry128 {
    uint64_t lo;
    uint64_t hi;
  };
  // What an MSI becomes: `msi` to send (unchanged, or `remapped`), or
  // neither: outside the interrupt range (dropped), or refused with `fault`
  // for interrupt `index` (`fpd`: its IRTE asks not to record it).
  struct Remapped {
    std::optional<MsiMessage> msi;
    bool remapped = false;
    bool outside = false;
    Fault fault = Fault::kIrRequestReserved;
    uint32_t index = 0;
    bool fpd = false;
  };
  Remapped Remap(const MsiMessage& msi, SourceId source) const;
  void RemappingChanged();

  uint32_t ReadDword(uint64_t offset) const;
  void WriteDword(uint64_t offset, uint32_t value);
  void WriteGcmd(uint32_t value);
  void SetQueueEnabled(bool on);
  void ProcessQueue();
  // Runs one descriptor; false on an invalidation queue error.
  bool RunDescriptor(const Entry128& d);
  void CompletionEvent();
  void QueueError();

  // The guest-physical address of `iova` for `source_id`, or nullopt after
  // counting (and maybe recording) the fault.
  std::optional<uint64_t> Translate(uint16_t source_id, uint64_t iova, bool write);
  // Translates [iova, iova + len) page by page, checking each piece is RAM,
  // then hands each (gpa, offset into the request, length) to `copy`.
  template <typename Copy>
  bool Dma(uint16_t source_id, uint64_t iova, uint64_t len, bool write, Copy copy);
  // `index` is the interrupt index; SourceId nullopt records SID 0xFFFF.
  void InterruptFault(SourceId source, Fault reason, uint32_t index, bool fpd);
  void RecordFault(uint16_t sid, Fault reason, uint64_t lo, bool read, bool fpd, std::string what);
  void FaultEvent(uint32_t fsts_before);
  void ClearFaultIpIfServiced();
  void SendEvent(uint64_t addr_lo, uint64_t addr_hi, uint32_t data);
  template <typename T>
  std::optional<T> ReadGuest(uint64_t base, uint64_t offset) const;

  const GuestMemory* memory_;
  MsiSink* downstream_;

  uint32_t gsts_ = 0;
  uint64_t rtaddr_ = 0, root_ = 0;
  bool root_rtt_ = false;  // the latched root table asks for scalable mode
  uint64_t ccmd_ = 0, iva_ = 0, iotlb_ = 0;
  uint32_t fsts_ = 0, fectl_ = 1u << 31, fedata_ = 0, feaddr_ = 0, feuaddr_ = 0;
  uint64_t frcd_lo_ = 0, frcd_hi_ = 0;
  uint64_t iqt_ = 0, iqa_ = 0, queue_base_ = 0;
  uint32_t head_ = 0, queue_size_ = 256;  // in descriptors
  uint32_t ics_ = 0, iectl_ = 1u << 31, iedata_ = 0, ieaddr_ = 0, ieuaddr_ = 0;
  uint64_t irta_ = 0, ir_base_ = 0;
  uint32_t ir_entries_ = 0;  // 0 until SIRTP

  uint64_t dma_faults_ = 0, interrupt_faults_ = 0, recorded_faults_ = 0, overflowed_faults_ = 0;
  uint64_t dma_not_ram_ = 0, remapped_interrupts_ = 0, dropped_interrupts_ = 0;
  uint64_t descriptors_done_ = 0, queue_errors_ = 0, ignored_accesses_ = 0;
  uint64_t unsupported_settings_ = 0;
  std::string first_fault_;
  std::function<void()> remapping_changed_;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_INTEL_IOMMU_H_
