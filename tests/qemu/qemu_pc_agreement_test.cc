// The PC machine against QEMU's `pc`: tests/pc_guests/pc_entry.elf booted
// as a Multiboot image by `qemu-system-x86_64 -kernel` and by `minivmm run
// --machine pc`, with the same command line and the same initrd, must see
// the same entry state and Multiboot information.
//
// pc_entry prints them as "key=value" lines and then "done". Every key both
// sides print is compared, after the differences in kDifferences, each with
// the reason it is not minivmm's to remove: all of them come from QEMU's
// firmware (SeaBIOS) and QEMU's own Multiboot loader placing things
// elsewhere. The exit status (isa-debug-exit, guest code 5: 11) must agree.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "tests/common/command.h"
#include "tests/common/pc_host.h"
#include "tests/qemu/qemu_run.h"

namespace {

using minivmm::testing::ConsoleLines;
using minivmm::testing::Output;
using minivmm::testing::PcRefusedHere;
using minivmm::testing::Quote;
using minivmm::testing::RunCommand;
using Lines = std::map<std::string, std::string>;

// The "key=value" lines of pc_entry's console (a key has no space; a value
// may hold '=', as the command line does).
Lines KeyValues(const std::string& text) {
  Lines lines;
  for (const std::string& line : ConsoleLines(text)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0 || line.substr(0, eq).find(' ') != std::string::npos)
      continue;
    lines[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return lines;
}

bool HasLine(const std::string& text, std::string_view want) {
  for (const std::string& line : ConsoleLines(text)) {
    if (line == want) return true;
  }
  return false;
}

// How a key is compared. nullopt: not at all; otherwise the part compared.
using Comparable = std::optional<std::string>(const std::string& value);

std::optional<std::string> NotCompared(const std::string&) { return std::nullopt; }

// flags without bits 1 (boot_device) and 9 (boot_loader_name).
std::optional<std::string> FlagsWithoutQemuExtras(const std::string& value) {
  const uint32_t flags = static_cast<uint32_t>(std::strtoul(value.c_str(), nullptr, 16));
  return std::to_string(flags & ~((1u << 1) | (1u << 9)));
}

// "base,length,type" without the length.
std::optional<std::string> BaseAndType(const std::string& value) {
  const size_t first = value.find(',');
  const size_t last = value.rfind(',');
  if (first == std::string::npos || first == last) return value;
  return value.substr(0, first) + value.substr(last);
}

struct Difference {
  const char* key;
  Comparable* compare;
  const char* why;
};

// The minimal list: every other key both sides print must be equal.
constexpr Difference kDifferences[] = {
    {"mbi", NotCompared,
     "where the Multiboot information is: QEMU's loader writes it at 0x9500, minivmm at 0x9000 "
     "(both free low memory; the guest reads it through EBX either way)"},
    {"eflags", NotCompared,
     "the whole register: Multiboot defines only IF and VM (compared as eflags.if, eflags.vm); "
     "SeaBIOS leaves PF set (0x6), minivmm enters with 0x2"},
    {"flags", FlagsWithoutQemuExtras,
     "QEMU's loader adds boot_device and boot_loader_name (bits 1 and 9), which minivmm does not "
     "give and pc_entry does not read; the other bits are compared"},
    {"mem_upper", NotCompared,
     "SeaBIOS keeps RAM's last 128 KiB for itself (e820 reserved), so QEMU's is 128 less; "
     "checked as exactly that below"},
    {"mod0.start", NotCompared,
     "where the module is placed: each loader takes the first free page after the image; "
     "its size, name and contents are compared"},
    {"mod0.end", NotCompared, "follows mod0.start"},
    {"mmap3", BaseAndType,
     "RAM above 1 MiB: the same base and type; QEMU's is 128 KiB shorter (SeaBIOS's reserve)"},
    {"mmap_entries", NotCompared,
     "QEMU's map is SeaBIOS's e820, which adds three reserved ranges after the first four "
     "entries (SeaBIOS's 128 KiB, the BIOS ROM below 4 GiB, the reserved range at 1012 GiB)"},
};

const Difference* FindDifference(const std::string& key) {
  for (const Difference& d : kDifferences) {
    if (key == d.key) return &d;
  }
  return nullptr;
}

// QEMU's memory map entries beyond the fourth are SeaBIOS's own reserved
// ranges (kDifferences' mmap_entries), printed only under QEMU.
bool QemuOnlyKey(const std::string& key) {
  return key.starts_with("mmap") && key != "mmap_entries" && std::atoi(key.c_str() + 4) >= 4;
}

TEST(QemuPcAgreementTest, PcEntrySeesTheSameBootStateUnderQemuAndMinivmm) {
  if (std::string_view(MINIVMM_QEMU).empty()) {
    GTEST_FAIL()
        << "qemu-system-x86_64 was not found when this build was configured "
           "(install Debian's qemu-system-x86, e.g. scripts/quickstart.sh, and re-run cmake)";
  }
  REQUIRE_KVM();
  // kvm-unit-tests' environment file is the usual initrd of a -kernel image.
  const std::string env = ::testing::TempDir() + "qemu_pc_agreement_env";
  std::ofstream(env) << "TESTNAME=pc_entry\n";
  const std::string cmdline = "a b exit=5";

  // TCG, as the other agreement tests: what QEMU's machine gives the guest
  // does not depend on a KVM, and QEMU with -accel kvm boots SeaBIOS slowly
  // on the nested and software KVMs (its firmware's ring-0 code is emulated).
  const Output qemu = RunCommand(std::string(MINIVMM_QEMU) +
                                     " -accel tcg -nodefaults -display none -serial stdio"
                                     " -device isa-debug-exit,iobase=0xf4,iosize=0x4 -m 128"
                                     " -kernel " +
                                     Quote(MINIVMM_PC_ENTRY_ELF) + " -append " + Quote(cmdline) +
                                     " -initrd " + Quote(env),
                                 60);
  const Output vmm = RunCommand(
      std::string(MINIVMM_BIN) + " run --machine pc -q --memory 128M --kernel " +
          Quote(MINIVMM_PC_ENTRY_ELF) + " --cmdline " + Quote(cmdline) + " --initrd " + Quote(env),
      60);
  if (PcRefusedHere(vmm.text)) {  // where the host check refuses the machine
    EXPECT_EQ(vmm.status, 125) << vmm.text;
    return;
  }
  // isa-debug-exit: (5 << 1) | 1 on both.
  EXPECT_EQ(qemu.status, 11) << "QEMU:\n" << qemu.text;
  EXPECT_EQ(vmm.status, 11) << "minivmm:\n" << vmm.text;
  ASSERT_TRUE(HasLine(qemu.text, "done")) << "QEMU:\n" << qemu.text;
  ASSERT_TRUE(HasLine(vmm.text, "done")) << "minivmm:\n" << vmm.text;

  const Lines q = KeyValues(qemu.text);
  const Lines m = KeyValues(vmm.text);
  size_t compared = 0;
  for (const auto& [key, value] : m) {
    auto it = q.find(key);
    if (it == q.end()) {
      ADD_FAILURE() << key << "=" << value << " printed under minivmm only";
      continue;
    }
    const Difference* d = FindDifference(key);
    const std::optional<std::string> qv = d ? d->compare(it->second) : it->second;
    const std::optional<std::string> mv = d ? d->compare(value) : value;
    if (!qv.has_value()) continue;
    ++compared;
    EXPECT_EQ(*qv, *mv) << key << " (QEMU " << it->second << ", minivmm " << value << ")"
                        << (d ? std::string(": compared without ") + d->why : "");
  }
  for (const auto& [key, value] : q) {
    if (m.count(key) == 0 && !QemuOnlyKey(key))
      ADD_FAILURE() << key << "=" << value << " printed under QEMU only";
  }
  // The one difference in size, exactly: SeaBIOS's 128 KiB.
  ASSERT_EQ(q.count("mem_upper"), 1u);
  ASSERT_EQ(m.count("mem_upper"), 1u);
  EXPECT_EQ(std::stoul(q.at("mem_upper")) + 128, std::stoul(m.at("mem_upper")));
  // The entry state, the command line and the module were among them.
  for (const char* key : {"magic", "cr0", "cr0.pe", "cr0.pg", "eflags.if", "eflags.vm", "flags",
                          "mem_lower", "cmdline", "mods_count", "mod0.size", "mod0.string",
                          "mod0.first_line", "mmap0", "mmap1", "mmap2", "mmap3"}) {
    EXPECT_EQ(m.count(key), 1u) << key;
  }
  EXPECT_GE(compared, 17u);
}

}  // namespace
