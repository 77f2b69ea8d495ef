#include "minivmm/symbolizer.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace minivmm {
namespace {

std::string Basename(const char* path) {
  if (path == nullptr) return "";
  const char* slash = strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

// The name of a subprogram or inlined subroutine (through its abstract
// origin, which dwarf_diename follows).
std::string DieName(Dwarf_Die* die) {
  const char* name = dwarf_diename(die);
  return name != nullptr ? name : "";
}

class DwSymbolizer final : public Symbolizer {
 public:
  DwSymbolizer(int fd, Elf* elf, Dwarf* dwarf) : fd_(fd), elf_(elf), dwarf_(dwarf) {}
  ~DwSymbolizer() override {
    if (dwarf_ != nullptr) dwarf_end(dwarf_);
    elf_end(elf_);
    close(fd_);
  }

  std::vector<SourceFrame> Lookup(uint64_t pc) const override {
    std::vector<SourceFrame> frames;
    if (dwarf_ != nullptr) FromDwarf(pc, frames);
    if (frames.empty()) frames.push_back(SourceFrame{.function = FromSymtab(pc), .file = {}});
    return frames;
  }

 private:
  void FromDwarf(uint64_t pc, std::vector<SourceFrame>& frames) const {
    Dwarf_Die cu;
    if (dwarf_addrdie(dwarf_, pc, &cu) == nullptr) return;
    // The line at pc belongs to the innermost scope; each inlined scope's
    // call site is the line in the scope around it.
    std::string file;
    int line = 0;
    if (Dwarf_Line* l = dwarf_getsrc_die(&cu, pc); l != nullptr) {
      file = Basename(dwarf_linesrc(l, nullptr, nullptr));
      dwarf_lineno(l, &line);
    }
    Dwarf_Files* files = nullptr;
    size_t nfiles = 0;
    if (dwarf_getsrcfiles(&cu, &files, &nfiles) != 0) files = nullptr;
    std::vector<Dwarf_Die> chain;  // outermost (the function) first
    Dwarf_Off last = 0;
    Enclosing(&cu, pc, chain, 0, last);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      Dwarf_Die* s = &*it;
      const bool inlined = dwarf_tag(s) == DW_TAG_inlined_subroutine;
      frames.push_back(
          SourceFrame{.function = DieName(s), .file = file, .line = line, .inlined = inlined});
      if (!inlined) break;
      // The caller's line: the inlined call's DW_AT_call_file/line.
      Dwarf_Attribute attr;
      Dwarf_Word value = 0;
      file.clear();
      line = 0;
      if (dwarf_formudata(dwarf_attr(s, DW_AT_call_line, &attr), &value) == 0)
        line = static_cast<int>(value);
      if (files != nullptr && dwarf_formudata(dwarf_attr(s, DW_AT_call_file, &attr), &value) == 0 &&
          value < nfiles)
        file = Basename(dwarf_filesrc(files, value, nullptr, nullptr));
    }
    if (frames.empty() && !file.empty())
      frames.push_back(SourceFrame{.function = {}, .file = file, .line = line});
    if (!frames.empty() && frames.back().function.empty()) frames.back().function = FromSymtab(pc);
  }

  // Appends to `chain` the function holding pc among `die`'s children and
  // the inlined calls inside it that hold pc, outermost first. (libdw's
  // dwarf_getscopes leaves out the function around an inlined call in
  // GCC 12's DWARF 5, so the tree is walked here.) The ELF is untrusted:
  // bounded in depth, and each DIE is visited at most once, in the order of
  // their offsets (`last`: the last one visited). A DW_AT_sibling may point
  // into the DIE's own children (libdw only checks that it points forward),
  // which would walk them again, twice as often at each level of nesting.
  static void Enclosing(Dwarf_Die* die, uint64_t pc, std::vector<Dwarf_Die>& chain, int depth,
                        Dwarf_Off& last) {
    constexpr int kMaxDepth = 64;
    Dwarf_Die child;
    if (depth > kMaxDepth || dwarf_child(die, &child) != 0) return;
    do {
      if (dwarf_dieoffset(&child) <= last) return;
      last = dwarf_dieoffset(&child);
      switch (dwarf_tag(&child)) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine:
          if (dwarf_haspc(&child, pc) == 1) {
            chain.push_back(child);
            Enclosing(&child, pc, chain, depth + 1, last);
            return;
          }
          break;
        case DW_TAG_lexical_block:
          if (dwarf_haspc(&child, pc) == 1) {
            Enclosing(&child, pc, chain, depth + 1, last);
            return;
          }
          break;
        case DW_TAG_namespace:
        case DW_TAG_class_type:
        case DW_TAG_structure_type: {
          const size_t before = chain.size();
          Enclosing(&child, pc, chain, depth + 1, last);
          if (chain.size() != before) return;
          break;
        }
        default:
          break;
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  // The STT_FUNC symbol whose [value, value + size) holds pc; else the
  // nearest symbol of size zero at or below pc in an executable section (an
  // assembly label), as "label+0xoffset"; else "".
  std::string FromSymtab(uint64_t pc) const {
    Elf_Scn* scn = nullptr;
    std::string label;
    uint64_t label_at = 0;
    while ((scn = elf_nextscn(elf_, scn)) != nullptr) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_SYMTAB || shdr.sh_entsize == 0)
        continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (data == nullptr) continue;
      const size_t count = data->d_size / shdr.sh_entsize;
      for (size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) break;
        const int type = GELF_ST_TYPE(sym.st_info);
        if (pc < sym.st_value || (type != STT_FUNC && type != STT_NOTYPE)) continue;
        const char* name = elf_strptr(elf_, shdr.sh_link, sym.st_name);
        if (name == nullptr || *name == '\0') continue;
        if (type == STT_FUNC && pc - sym.st_value < sym.st_size) return name;
        if (sym.st_size == 0 && sym.st_value >= label_at && InCode(sym.st_shndx)) {
          label = name;
          label_at = sym.st_value;
        }
      }
    }
    if (label.empty()) return "";
    return pc == label_at ? label : absl::StrFormat("%s+0x%x", label, pc - label_at);
  }

  bool InCode(size_t index) const {
    if (index == SHN_UNDEF || index >= SHN_LORESERVE) return false;
    GElf_Shdr shdr;
    Elf_Scn* scn = elf_getscn(elf_, index);
    return scn != nullptr && gelf_getshdr(scn, &shdr) != nullptr &&
           (shdr.sh_flags & SHF_EXECINSTR) != 0;
  }

  int fd_;
  Elf* elf_;
  Dwarf* dwarf_;  // null: no usable DWARF
};

}  // namespace

absl::StatusOr<std::unique_ptr<Symbolizer>> Symbolizer::Open(const std::string& path) {
  elf_version(EV_CURRENT);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return absl::NotFoundError(absl::StrFormat("cannot open %s: %s", path, strerror(errno)));
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
    if (elf != nullptr) elf_end(elf);
    close(fd);
    return absl::InvalidArgumentError(absl::StrFormat("%s is not an ELF file", path));
  }
  // Without DWARF (stripped, or sections libdw refuses) only the symbol
  // table, if any, names addresses.
  Dwarf* dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
  return std::unique_ptr<Symbolizer>(new DwSymbolizer(fd, elf, dwarf));
}

}  // namespace minivmm
