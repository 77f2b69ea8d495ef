// QEMU's firmware configuration device (fw_cfg, QEMU's docs/specs/fw_cfg.rst)
// through its legacy port interface, as on QEMU's PC machines at 0x510: the
// guest writes a 16-bit key to the selector, then reads the selected item one
// byte at a time from the data port. Only the traditional interface: no DMA
// (FW_CFG_ID says so), no files (the file directory lists none).
//
// Semantics, matching QEMU's hw/nvram/fw_cfg.c (fw_cfg_comb_mem_ops), where
// both ports are one 2-byte region whose handlers ignore the port address:
//  - a 2-byte write at offset 0 selects key v (little-endian) and restarts
//    the item at byte 0 (at offset 1 it would run past the device: ignored);
//  - a 1-byte write at either port is a data write, which QEMU ignores since
//    v2.4, so it does not select anything; writes of other sizes are refused
//    by QEMU and ignored here;
//  - a 1-byte read at either port returns the next byte of the selected item,
//    0 once past its end (QEMU reads the data at 0x510 as well as at 0x511);
//  - a read of any other size returns 0 and consumes nothing: QEMU refuses it
//    (only 1-byte reads are valid) and the refused read yields 0.
// Keys: bit 14 (write channel) is ignored, as QEMU masks it off before the
// look-up; bit 15 selects the arch-local items, of which this device has none,
// so they read 0, as does any key without an item. Until the guest selects a
// key the signature is selected, as after QEMU's reset.
#ifndef MINIVMM_DEVICES_FW_CFG_H_
#define MINIVMM_DEVICES_FW_CFG_H_

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "minivmm/io_device.h"

namespace minivmm {

// The keys this device answers, as QEMU numbers them (include/standard-headers/
// linux/qemu_fw_cfg.h); every other key reads 0.
enum FwCfgKey : uint16_t {
  kFwCfgSignature = 0x00,  // "QEMU"
  kFwCfgId = 0x01,         // u32 feature bits: 1 = the traditional interface
  kFwCfgRamSize = 0x03,    // u64 bytes of RAM
  kFwCfgNoGraphic = 0x04,  // u16 1
  kFwCfgNbCpus = 0x05,     // u16 vCPUs present
  kFwCfgMaxCpus = 0x0f,    // u16 vCPUs possible (= present)
  kFwCfgFileDir = 0x19,    // big-endian u32 file count, then the files (none)
  kFwCfgFileFirst = 0x20,  // first file item; also the end of the fixed keys
};
inline constexpr uint16_t kFwCfgWriteChannel = 0x4000;
inline constexpr uint16_t kFwCfgArchLocal = 0x8000;

struct FwCfgConfig {
  uint16_t cpus = 1;
  uint64_t ram_bytes = 0;
};

class FwCfg final : public IoDevice {
 public:
  static constexpr uint64_t kPortBase = 0x510;  // where QEMU's PC machines put it
  static constexpr uint64_t kSelectorOffset = 0;
  static constexpr uint64_t kDataOffset = 1;
  static constexpr uint64_t kIoSize = 2;  // register on the bus with this length

  // Builds every item from `config` once; nothing changes them afterwards.
  // Not thread-safe: one vCPU drives it at a time.
  explicit FwCfg(const FwCfgConfig& config);

  std::string_view Name() const override { return "fw-cfg"; }

  void Read(uint64_t offset, std::span<uint8_t> data, ExitContext& ctx) override;
  void Write(uint64_t offset, std::span<const uint8_t> data, ExitContext& ctx) override;

  // Writes the device ignored: data writes and writes of a size or at an
  // offset that selects nothing.
  uint64_t ignored_writes() const { return ignored_writes_; }

 private:
  void Select(uint16_t key);
  uint8_t NextByte();

  std::array<std::vector<uint8_t>, kFwCfgFileFirst> items_;
  const std::vector<uint8_t>* selected_ = nullptr;  // null: a key without an item
  uint32_t read_offset_ = 0;                        // next byte of *selected_
  uint64_t ignored_writes_ = 0;
};

}  // namespace minivmm

#endif  // MINIVMM_DEVICES_FW_CFG_H_
