#include "devices/intel_iommu.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"

namespace minivmm {
namespace {

constexpr uint32_t kVersion = 0x10;
constexpr uint64_t kCapValue = uint64_t{2}                   // ND: 256 domains
                               | uint64_t{0x2} << 8          // SAGAW: 39-bit, 3-level
                               | uint64_t{38} << 16          // MGAW: 39 bits
                               | uint64_t{0x220 / 16} << 24  // FRO
                               | uint64_t{3} << 34           // SLLPS: 2 MiB, 1 GiB
                               | uint64_t{1} << 39           // PSI
                               | uint64_t{0x12} << 48;       // MAMV
constexpr uint64_t kEcapValue = uint64_t{1} << 1             // QI
                                | uint64_t{1} << 3           // IR
                                | uint64_t{0xF0 / 16} << 8;  // IRO
constexpr uint32_t kOneShot = IntelIommu::kSrtp | IntelIommu::kSirtp | IntelIommu::kWbf;

// FSTS, FECTL/IECTL, ICS bits.
constexpr uint32_t kPfo = 1u << 0, kPpf = 1u << 1, kIqe = 1u << 4, kIce = 1u << 5, kIte = 1u << 6;
constexpr uint32_t kFstsRw1c = kPfo | kIqe | kIce | kIte;
constexpr uint32_t kPendingFaults = kPfo | kPpf | kIqe;
constexpr uint32_t kIm = 1u << 31, kIp = 1u << 30;
constexpr uint32_t kIwc = 1u << 0;
// Fault recording register, high qword.
constexpr uint64_t kFrcdF = uint64_t{1} << 63, kFrcdT = uint64_t{1} << 62;

constexpr uint64_t kPageMask = ~uint64_t{0xFFF};
constexpr uint64_t kRtt = uint64_t{1} << 11;    // RTADDR: scalable-mode root table
constexpr uint64_t kIqaDw = uint64_t{1} << 11;  // IQA: 256-bit descriptors
constexpr uint64_t kIrtaEime = uint64_t{1} << 11;
constexpr uint64_t kIqtMask = 0x7FFF0;             // IQT/IQH bits 18:4
constexpr uint64_t kPteAddr = 0x000FFFFFFFFFF000;  // bits 51:12
constexpr uint64_t kIovaLimit = uint64_t{1} << 39;
// Context entry: present, FPD, TT, AW; reserved low bits 11:4, high bit 7 and 63:24.
constexpr uint64_t kCtxReservedLo = 0xFF0, kCtxReservedHi = 0xFFFFFFFFFF000080;
// IRTE: reserved low bits 14:12 and 31:24, IM (posted) bit 15; high bits 63:20.
constexpr uint64_t kIrteReservedLo = 0xFF00F000, kIrteReservedHi = ~uint64_t{0xFFFFF};
constexpr uint16_t kNoSid = 0xFFFF;

std::string_view FaultName(IntelIommu::Fault f) {
  using F = IntelIommu::Fault;
  switch (f) {
    case F::kRootNotPresent:
      return "root entry not present";
    case F::kContextNotPresent:
      return "context entry not present";
    case F::kContextInvalid:
      return "invalid context entry";
    case F::kAddressBeyondMgaw:
      return "address beyond 39 bits";
    case F::kWrite:
      return "write to a page without W";
    case F::kRead:
      return "read from a page without R";
    case F::kPagingEntryNotRam:
      return "paging entry not in RAM";
    case F::kRootTableNotRam:
      return "root table not in RAM";
    case F::kContextTableNotRam:
      return "context table not in RAM";
    case F::kIrRequestReserved:
      return "reserved bits in the interrupt request";
    case F::kIrIndexBeyondSize:
      return "interrupt index beyond the table";
    case F::kIrteNotPresent:
      return "IRTE not present";
    case F::kIrteNotRam:
      return "IRTE not in RAM";
    case F::kIrteReserved:
      return "reserved bits in the IRTE";
    case F::kIrCompatBlocked:
      return "compatibility-format interrupt blocked";
    case F::kIrSidMismatch:
      return "source-id verification failed";
  }
  return "?";
}

uint32_t Half(uint64_t reg, bool high) { return static_cast<uint32_t>(high ? reg >> 32 : reg); }
void SetHalf(uint64_t& reg, bool high, uint32_t value) {
  const int shift = high ? 32 : 0;
  reg = (reg & ~(uint64_t{0xFFFFFFFF} << shift)) | uint64_t{value} << shift;
}

}  // namespace

// --- Registers ---

void IntelIommu::Read(uint64_t offset, std::span<uint8_t> data, ExitContext& /*ctx*/) {
  const size_t size = data.size();
  if ((size != 4 && size != 8) || offset % size != 0 || offset >= kIoSize) {
    ++ignored_accesses_;
    std::fill(data.begin(), data.end(), uint8_t{0});
    return;
  }
  for (size_t i = 0; i < size; i += 4) {
    const uint32_t v = ReadDword(offset + i);
    std::memcpy(data.data() + i, &v, 4);  // little-endian host, 4 bytes inside `data`
  }
}

void IntelIommu::Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& /*ctx*/) {
  const size_t size = data.size();
  if ((size != 4 && size != 8) || offset % size != 0 || offset >= kIoSize) {
    ++ignored_accesses_;
    return;
  }
  for (size_t i = 0; i < size; i += 4) {
    uint32_t v;
    std::memcpy(&v, data.data() + i, 4);  // 4 bytes inside `data`
    WriteDword(offset + i, v);
  }
}

uint32_t IntelIommu::ReadDword(uint64_t offset) const {
  const bool high = offset % 8 == 4;
  switch (offset & ~uint64_t{4}) {
    case kVer:
      return high ? 0 : kVersion;
    case kCap:
      return Half(kCapValue, high);
    case kEcap:
      return Half(kEcapValue, high);
    case kGcmd:
      return high ? gsts_ : 0;  // GCMD reads 0; GSTS is its high half
    case kRtaddr:
      return Half(rtaddr_, high);
    case kCcmd:
      return Half(ccmd_, high);
    case kFsts - 4:  // a reserved dword, then FSTS
      return high ? fsts_ : 0;
    case kFectl:
      return high ? fedata_ : fectl_;  // 0x38 FECTL, 0x3C FEDATA
    case kFeaddr:
      return high ? feuaddr_ : feaddr_;
    case kIqh:
      return Half(uint64_t{head_} << 4, high);
    case kIqt:
      return Half(iqt_, high);
    case kIqa:
      return Half(iqa_, high);
    case kIcs - 4:  // a reserved dword, then ICS
      return high ? ics_ : 0;
    case kIectl:
      return high ? iedata_ : iectl_;
    case kIeaddr:
      return high ? ieuaddr_ : ieaddr_;
    case kIrta:
      return Half(irta_, high);
    case kIva:
      return Half(iva_, high);
    case kIotlb:
      return Half(iotlb_, high);
    case kFrcd:
      return Half(frcd_lo_, high);
    case kFrcd + 8:
      return Half(frcd_hi_, high);
    default:
      return 0;
  }
}

void IntelIommu::WriteDword(uint64_t offset, uint32_t value) {
  const bool high = offset % 8 == 4;
  switch (offset) {
    case kGcmd:
      return WriteGcmd(value);
    case kRtaddr:
    case kRtaddr + 4:
      return SetHalf(rtaddr_, high, value & (high ? ~0u : 0xFFFFF800));
    case kCcmd:
      return SetHalf(ccmd_, false, value);
    case kCcmd + 4:
      SetHalf(ccmd_, true, value & ~(3u << 27));  // CAIG is read-only
      if (ccmd_ & uint64_t{1} << 63) {
        // No context cache: done at once, at the granularity asked for.
        ccmd_ &= ~(uint64_t{1} << 63);
        ccmd_ |= ((ccmd_ >> 61) & 3) << 59;
      }
      return;
    case kFsts:
      fsts_ &= ~(value & kFstsRw1c);
      return ClearFaultIpIfServiced();
    case kFectl: {
      fectl_ = (fectl_ & kIp) | (value & kIm);
      if ((fectl_ & kIp) && !(fectl_ & kIm)) {
        fectl_ &= ~kIp;
        SendEvent(feaddr_, feuaddr_, fedata_);
      }
      return;
    }
    case kFedata:
      fedata_ = value;
      return;
    case kFeaddr:
      feaddr_ = value & ~3u;
      return;
    case kFeuaddr:
      feuaddr_ = value;
      return;
    case kIqt:
      iqt_ = value & kIqtMask;
      if ((gsts_ & kQie) && !(fsts_ & kIqe)) ProcessQueue();
      return;
    case kIqt + 4:
      return;  // reserved
    case kIqa:
      return SetHalf(iqa_, false, value & 0xFFFFF807);
    case kIqa + 4:
      return SetHalf(iqa_, true, value);
    case kIcs:
      if (value & kIwc) {
        ics_ &= ~kIwc;
        iectl_ &= ~kIp;
      }
      return;
    case kIectl:
      iectl_ = (iectl_ & kIp) | (value & kIm);
      if ((iectl_ & kIp) && !(iectl_ & kIm)) {
        iectl_ &= ~kIp;
        SendEvent(ieaddr_, ieuaddr_, iedata_);
      }
      return;
    case kIedata:
      iedata_ = value;
      return;
    case kIeaddr:
      ieaddr_ = value & ~3u;
      return;
    case kIeuaddr:
      ieuaddr_ = value;
      return;
    case kIrta:
      return SetHalf(irta_, false, value & 0xFFFFF80F);
    case kIrta + 4:
      return SetHalf(irta_, true, value);
    case kIva:
    case kIva + 4:
      return SetHalf(iva_, high, value);
    case kIotlb:
      return SetHalf(iotlb_, false, value);
    case kIotlb + 4:
      SetHalf(iotlb_, true, value & ~(3u << 25));  // IAIG is read-only
      if (iotlb_ & uint64_t{1} << 63) {
        iotlb_ &= ~(uint64_t{1} << 63);
        iotlb_ |= ((iotlb_ >> 60) & 3) << 57;
      }
      return;
    case kFrcd + 12:
      if (value & (1u << 31)) {
        frcd_hi_ &= ~kFrcdF;
        fsts_ &= ~kPpf;  // the only register is empty now
        ClearFaultIpIfServiced();
      }
      return;
    default:
      ++ignored_accesses_;  // read-only or nothing there
      return;
  }
}

void IntelIommu::WriteGcmd(uint32_t value) {
  const uint32_t changed = (gsts_ ^ value) & ~kOneShot;
  if (changed & kTe) gsts_ ^= kTe;  // no caches to reset
  if (value & kSrtp) {
    root_ = rtaddr_ & kPageMask;
    root_rtt_ = (rtaddr_ & kRtt) != 0;
    if (root_rtt_) ++unsupported_settings_;
    gsts_ |= kSrtp;
  }
  if (changed & kQie) SetQueueEnabled((value & kQie) != 0);
  if (value & kSirtp) {
    ir_base_ = irta_ & kPageMask;
    ir_entries_ = 2u << (irta_ & 0xF);
    if (irta_ & kIrtaEime) ++unsupported_settings_;
    gsts_ |= kSirtp;
  }
  if (changed & kIre) gsts_ ^= kIre;
  if (changed & kCfi) gsts_ ^= kCfi;
  if ((value & kSirtp) || (changed & (kIre | kCfi))) RemappingChanged();
}

// --- Queued invalidation ---

void IntelIommu::SetQueueEnabled(bool on) {
  if (!on) {
    if (head_ != (iqt_ >> 4)) return;  // refused, as QEMU does, while work is queued
    head_ = 0;
    gsts_ &= ~kQie;
    return;
  }
  queue_base_ = iqa_ & kPageMask;
  queue_size_ = 256u << (iqa_ & 7);
  if (iqa_ & kIqaDw) ++unsupported_settings_;
  head_ = 0;
  gsts_ |= kQie;
  // Windows writes the tail before enabling; QEMU processes it then too.
  if (iqt_ != 0 && !(fsts_ & kIqe)) ProcessQueue();
}

void IntelIommu::ProcessQueue() {
  const uint32_t tail = static_cast<uint32_t>(iqt_ >> 4);
  if (tail >= queue_size_) return QueueError();
  while (head_ != tail) {
    const std::optional<Entry128> d =
        ReadGuest<Entry128>(queue_base_, uint64_t{head_} * sizeof(Entry128));
    if (!d || !RunDescriptor(*d)) return QueueError();
    ++descriptors_done_;
    head_ = (head_ + 1) % queue_size_;
  }
}

bool IntelIommu::RunDescriptor(const Entry128& d) {
  const uint64_t type = (d.lo & 0xF) | ((d.lo >> 5) & 0x70);  // bits 11:9 are type 6:4
  switch (type) {
    // Context cache, IOTLB, device-IOTLB: nothing is cached.
    case 1:
    case 2:
    case 3:
      return true;
    // Interrupt entry cache: nothing cached here either, but the machine's
    // copies of remapped messages (its KVM routes) are redone.
    case 4:
      RemappingChanged();
      return true;
    case 5: {  // invalidation wait
      if (d.lo & (1u << 5)) {
        const uint32_t status = static_cast<uint32_t>(d.lo >> 32);
        if (!memory_->WriteObj(GuestAddress(d.hi & ~uint64_t{3}), status)) return false;
      }
      if (d.lo & (1u << 4)) CompletionEvent();
      return true;
    }
    default:
      return false;
  }
}

void IntelIommu::CompletionEvent() {
  if (ics_ & kIwc) return;  // one pending already (QEMU and the spec)
  ics_ |= kIwc;
  if (iectl_ & kIm) {
    iectl_ |= kIp;
  } else {
    SendEvent(ieaddr_, ieuaddr_, iedata_);
  }
}

void IntelIommu::QueueError() {
  ++queue_errors_;
  const uint32_t before = fsts_;
  fsts_ |= kIqe;
  FaultEvent(before);
}

// --- Faults ---

void IntelIommu::RecordFault(uint16_t sid, Fault reason, uint64_t lo, bool read, bool fpd,
                             std::string what) {
  if (first_fault_.empty()) first_fault_ = std::move(what);
  if (fpd || (fsts_ & kPfo)) return;
  const uint32_t before = fsts_;
  if (frcd_hi_ & kFrcdF) {
    ++overflowed_faults_;
    fsts_ |= kPfo;
    return;  // PPF is set, so no new event
  }
  ++recorded_faults_;
  frcd_lo_ = lo;
  frcd_hi_ = kFrcdF | (read ? kFrcdT : 0) | uint64_t{static_cast<uint8_t>(reason)} << 32 | sid;
  fsts_ |= kPpf;  // FRI stays 0: there is one register
  FaultEvent(before);
}

void IntelIommu::FaultEvent(uint32_t fsts_before) {
  if (fsts_before & kPendingFaults) return;  // software has not serviced the last one
  if (fectl_ & kIm) {
    fectl_ |= kIp;
  } else {
    SendEvent(feaddr_, feuaddr_, fedata_);
  }
}

void IntelIommu::ClearFaultIpIfServiced() {
  if (!(fsts_ & kPendingFaults)) fectl_ &= ~kIp;
}

void IntelIommu::SendEvent(uint64_t addr_lo, uint64_t addr_hi, uint32_t data) {
  downstream_->SendMsi(MsiMessage{.address = addr_hi << 32 | addr_lo, .data = data}, std::nullopt);
}

template <typename T>
std::optional<T> IntelIommu::ReadGuest(uint64_t base, uint64_t offset) const {
  if (offset > ~base) return std::nullopt;  // base + offset would wrap
  return memory_->ReadObj<T>(GuestAddress(base + offset));
}

// --- DMA remapping ---

std::optional<uint64_t> IntelIommu::Translate(uint16_t sid, uint64_t iova, bool write) {
  bool fpd = false;
  auto fail = [&](Fault reason) -> std::optional<uint64_t> {
    ++dma_faults_;
    RecordFault(sid, reason, iova & kPageMask, !write, fpd,
                absl::StrFormat("DMA fault 0x%x (%s): %02x:%02x.%x %s 0x%x",
                                static_cast<int>(reason), FaultName(reason), sid >> 8,
                                (sid >> 3) & 0x1F, sid & 7, write ? "write" : "read", iova));
    return std::nullopt;
  };
  if (root_rtt_) return fail(Fault::kRootTableNotRam);
  const std::optional<Entry128> root = ReadGuest<Entry128>(root_, (sid >> 8) * sizeof(Entry128));
  if (!root) return fail(Fault::kRootTableNotRam);
  if (!(root->lo & 1)) return fail(Fault::kRootNotPresent);
  const std::optional<Entry128> ctx =
      ReadGuest<Entry128>(root->lo & kPageMask, (sid & 0xFF) * sizeof(Entry128));
  if (!ctx) return fail(Fault::kContextTableNotRam);
  if (!(ctx->lo & 1)) return fail(Fault::kContextNotPresent);
  fpd = (ctx->lo & 2) != 0;
  const uint64_t tt = (ctx->lo >> 2) & 3, aw = ctx->hi & 7;
  if (tt != 0 || aw != 1 || (ctx->lo & kCtxReservedLo) || (ctx->hi & kCtxReservedHi))
    return fail(Fault::kContextInvalid);
  if (iova >= kIovaLimit) return fail(Fault::kAddressBeyondMgaw);
  uint64_t table = ctx->lo & kPageMask;
  for (int level = 3; level >= 1; --level) {
    const int shift = 12 + 9 * (level - 1);
    const std::optional<uint64_t> pte = ReadGuest<uint64_t>(table, ((iova >> shift) & 511) * 8);
    if (!pte) return fail(Fault::kPagingEntryNotRam);
    if (!(*pte & (write ? 2 : 1))) return fail(write ? Fault::kWrite : Fault::kRead);
    if (level == 1 || (*pte & (1u << 7))) {
      const uint64_t page_mask = (uint64_t{1} << shift) - 1;
      return (*pte & kPteAddr & ~page_mask) | (iova & page_mask);
    }
    table = *pte & kPteAddr;
  }
  return std::nullopt;  // not reached: level 1 always ends the walk
}

template <typename Copy>
bool IntelIommu::Dma(uint16_t sid, uint64_t iova, uint64_t len, bool write, Copy copy) {
  struct Piece {
    uint64_t gpa, offset, len;
  };
  std::vector<Piece> pieces;
  for (uint64_t done = 0; done < len;) {
    // Each step stays below 2^39 once translated, so iova + done cannot wrap.
    const uint64_t at = iova + done;
    const uint64_t n = std::min(len - done, 0x1000 - (at & 0xFFF));
    const std::optional<uint64_t> gpa = Translate(sid, at, write);
    if (!gpa) return false;
    if (!memory_->Contains(GuestAddress(*gpa), n)) {
      ++dma_not_ram_;
      return false;
    }
    pieces.push_back({*gpa, done, n});
    done += n;
  }
  for (const Piece& p : pieces) {
    if (!copy(p.gpa, p.offset, p.len)) return false;  // not reached: checked above
  }
  return true;
}

bool IntelIommu::Read(uint16_t source_id, uint64_t address, std::span<uint8_t> out) {
  if (!(gsts_ & kTe)) return memory_->Read(GuestAddress(address), out);
  return Dma(source_id, address, out.size(), /*write=*/false,
             [&](uint64_t gpa, uint64_t offset, uint64_t len) {
               return memory_->Read(GuestAddress(gpa), out.subspan(offset, len));
             });
}

bool IntelIommu::Write(uint16_t source_id, uint64_t address, std::span<const uint8_t> in) {
  if (!(gsts_ & kTe)) return memory_->Write(GuestAddress(address), in);
  return Dma(source_id, address, in.size(), /*write=*/true,
             [&](uint64_t gpa, uint64_t offset, uint64_t len) {
               return memory_->Write(GuestAddress(gpa), in.subspan(offset, len));
             });
}

// --- Interrupt remapping ---

void IntelIommu::InterruptFault(SourceId source, Fault reason, uint32_t index, bool fpd) {
  ++interrupt_faults_;
  const uint16_t sid = source.value_or(kNoSid);
  RecordFault(sid, reason, uint64_t{index & 0xFFFF} << 48, /*read=*/false, fpd,
              absl::StrFormat("interrupt fault 0x%x (%s): sid 0x%04x index %u",
                              static_cast<int>(reason), FaultName(reason), sid, index));
}

IntelIommu::Remapped IntelIommu::Remap(const MsiMessage& msi, SourceId source) const {
  auto refused = [](Fault reason, uint32_t index, bool fpd) {
    Remapped r;
    r.fault = reason;
    r.index = index;
    r.fpd = fpd;
    return r;
  };
  if (!(gsts_ & kIre)) return Remapped{.msi = msi};
  if ((msi.address >> 20) != 0xFEE) {
    Remapped r;
    r.outside = true;
    return r;
  }
  if (!(msi.address & (1u << 4))) {  // compatibility format
    if (gsts_ & kCfi) return Remapped{.msi = msi};
    return refused(Fault::kIrCompatBlocked, 0, /*fpd=*/false);
  }
  const uint32_t handle =
      static_cast<uint32_t>(((msi.address >> 5) & 0x7FFF) | ((msi.address >> 2) & 1) << 15);
  uint32_t index = handle;
  if (msi.address & (1u << 3)) {  // SHV: the data's low half is a subhandle
    if (msi.data & 0xFFFF0000) return refused(Fault::kIrRequestReserved, index, false);
    index += msi.data & 0xFFFF;
  }
  if (index >= ir_entries_) return refused(Fault::kIrIndexBeyondSize, index, false);
  const std::optional<Entry128> irte = ReadGuest<Entry128>(ir_base_, uint64_t{index} * 16);
  if (!irte) return refused(Fault::kIrteNotRam, index, false);
  if (!(irte->lo & 1)) return refused(Fault::kIrteNotPresent, index, false);
  const bool fpd = (irte->lo & 2) != 0;
  const uint64_t svt = (irte->hi >> 18) & 3, sq = (irte->hi >> 16) & 3;
  const uint16_t sid = static_cast<uint16_t>(irte->hi);
  if ((irte->lo & kIrteReservedLo) || (irte->hi & kIrteReservedHi) || svt == 3)
    return refused(Fault::kIrteReserved, index, fpd);
  if (source && svt == 1) {
    static constexpr uint16_t kSqMask[4] = {0xFFFF, 0xFFFB, 0xFFF9, 0xFFF8};
    if ((sid ^ *source) & kSqMask[sq]) return refused(Fault::kIrSidMismatch, index, fpd);
  } else if (source && svt == 2) {
    const uint32_t bus = *source >> 8;
    if (bus < (sid >> 8u) || bus > (sid & 0xFFu)) return refused(Fault::kIrSidMismatch, index, fpd);
  }
  const uint64_t lo = irte->lo;
  const uint64_t apic_id = (lo >> 40) & 0xFF;  // xAPIC: destination bits 15:8
  const uint64_t dm = (lo >> 2) & 1, rh = (lo >> 3) & 1, tm = (lo >> 4) & 1, dlm = (lo >> 5) & 7;
  MsiMessage out;
  out.address = 0xFEE00000 | apic_id << 12 | rh << 3 | dm << 2;
  out.data = static_cast<uint32_t>(((lo >> 16) & 0xFF) | dlm << 8 | tm << 15 | tm << 14);
  return Remapped{.msi = out, .remapped = true};
}

void IntelIommu::SendMsi(const MsiMessage& msi, SourceId source) {
  const Remapped r = Remap(msi, source);
  if (r.outside) {
    ++dropped_interrupts_;
    return;
  }
  if (!r.msi) return InterruptFault(source, r.fault, r.index, r.fpd);
  if (r.remapped) ++remapped_interrupts_;
  downstream_->SendMsi(*r.msi, source);
}

std::optional<MsiMessage> IntelIommu::RemapQuietly(const MsiMessage& msi, SourceId source) const {
  return Remap(msi, source).msi;
}

void IntelIommu::RemappingChanged() {
  if (remapping_changed_) remapping_changed_();
}

}  // namespace minivmm
