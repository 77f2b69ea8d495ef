// Builds small ELF images in memory for the loader tests: a valid image by
// default, which a test then breaks in exactly one field. ElfBuilder makes
// ELF64 x86-64 images, Elf32Builder ELF32 i386 ones.
#ifndef MINIVMM_TESTS_VMM_UNIT_ELF_BUILDER_H_
#define MINIVMM_TESTS_VMM_UNIT_ELF_BUILDER_H_

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace minivmm::elftest {

inline constexpr uint64_t kBase = 0x100000;  // MVMM_KERNEL_MIN_GPA

template <typename Ehdr, typename Phdr, int kClass, int kMachine>
class BasicElfBuilder {
 public:
  BasicElfBuilder() {
    std::memcpy(ehdr_.e_ident, ELFMAG, SELFMAG);
    ehdr_.e_ident[EI_CLASS] = kClass;
    ehdr_.e_ident[EI_DATA] = ELFDATA2LSB;
    ehdr_.e_ident[EI_VERSION] = EV_CURRENT;
    ehdr_.e_type = ET_EXEC;
    ehdr_.e_machine = kMachine;
    ehdr_.e_version = EV_CURRENT;
    ehdr_.e_entry = kBase;
    ehdr_.e_ehsize = sizeof(Ehdr);
    ehdr_.e_phentsize = sizeof(Phdr);
  }

  Ehdr& header() { return ehdr_; }

  // A PT_LOAD at paddr == vaddr holding `bytes`, p_memsz `memsz`.
  BasicElfBuilder& Load(uint64_t paddr, std::vector<uint8_t> bytes, uint64_t memsz,
                        uint32_t flags = PF_R | PF_X) {
    Phdr ph{};
    ph.p_type = PT_LOAD;
    ph.p_flags = flags;
    ph.p_vaddr = ph.p_paddr = paddr;
    ph.p_filesz = bytes.size();
    ph.p_memsz = memsz;
    ph.p_align = 4096;
    segments_.push_back({ph, std::move(bytes)});
    return *this;
  }

  // A PT_NOTE holding one note, laid out with 4-byte alignment.
  BasicElfBuilder& Note(const std::string& name, uint32_t type, std::vector<uint8_t> desc) {
    std::vector<uint8_t> bytes;
    auto put32 = [&bytes](uint32_t v) {
      for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
    };
    auto pad = [&bytes] {
      while (bytes.size() % 4) bytes.push_back(0);
    };
    put32(static_cast<uint32_t>(name.size() + 1));
    put32(static_cast<uint32_t>(desc.size()));
    put32(type);
    bytes.insert(bytes.end(), name.begin(), name.end());
    bytes.push_back(0);
    pad();
    bytes.insert(bytes.end(), desc.begin(), desc.end());
    pad();
    Phdr ph{};
    ph.p_type = PT_NOTE;
    ph.p_flags = PF_R;
    ph.p_filesz = ph.p_memsz = bytes.size();
    ph.p_align = 4;
    segments_.push_back({ph, std::move(bytes)});
    return *this;
  }

  // Header, program headers, then each segment's bytes (8-aligned).
  std::vector<uint8_t> Build() const {
    Ehdr ehdr = ehdr_;
    ehdr.e_phoff = sizeof(Ehdr);
    ehdr.e_phnum = static_cast<uint16_t>(segments_.size());
    std::vector<uint8_t> file(sizeof(ehdr) + segments_.size() * sizeof(Phdr));
    std::memcpy(file.data(), &ehdr, sizeof(ehdr));
    for (size_t i = 0; i < segments_.size(); ++i) {
      while (file.size() % 8) file.push_back(0);
      Phdr ph = segments_[i].phdr;
      ph.p_offset = file.size();
      file.insert(file.end(), segments_[i].bytes.begin(), segments_[i].bytes.end());
      std::memcpy(file.data() + sizeof(ehdr) + i * sizeof(ph), &ph, sizeof(ph));
    }
    return file;
  }

 private:
  struct Segment {
    Phdr phdr;
    std::vector<uint8_t> bytes;
  };
  Ehdr ehdr_{};
  std::vector<Segment> segments_;
};

using ElfBuilder = BasicElfBuilder<Elf64_Ehdr, Elf64_Phdr, ELFCLASS64, EM_X86_64>;
using Elf32Builder = BasicElfBuilder<Elf32_Ehdr, Elf32_Phdr, ELFCLASS32, EM_386>;

// Edits a built image's ELF header or program header `i` in place (ELF64
// unless told Elf32_Ehdr / Elf32_Phdr).
template <typename Ehdr = Elf64_Ehdr, typename F>
void EditHeader(std::vector<uint8_t>& file, F edit) {
  Ehdr ehdr;
  std::memcpy(&ehdr, file.data(), sizeof(ehdr));
  edit(ehdr);
  std::memcpy(file.data(), &ehdr, sizeof(ehdr));
}

template <typename Phdr = Elf64_Phdr, typename F>
void EditPhdr(std::vector<uint8_t>& file, int i, F edit) {
  using Ehdr = std::conditional_t<sizeof(Phdr) == sizeof(Elf64_Phdr), Elf64_Ehdr, Elf32_Ehdr>;
  Phdr ph;
  const size_t at = sizeof(Ehdr) + i * sizeof(Phdr);
  std::memcpy(&ph, file.data() + at, sizeof(ph));
  edit(ph);
  std::memcpy(file.data() + at, &ph, sizeof(ph));
}

}  // namespace minivmm::elftest

#endif  // MINIVMM_TESTS_VMM_UNIT_ELF_BUILDER_H_
