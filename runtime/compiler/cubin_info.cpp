#include "runtime/compiler/cubin_info.h"

#include <elf.h>

#include <cstring>

namespace attnc {
namespace {

// .nv.info records: u8 format, u8 attribute, then either a u16 inline value or, for format
// EIFMT_SVAL, a u16 size and that many payload bytes.
constexpr unsigned char kFormatSval = 0x04;
constexpr unsigned char kAttrFrameSize = 0x11;
constexpr unsigned char kAttrRegCount = 0x2f;

template <class T>
bool read(const std::vector<char>& b, size_t off, T& out) {
  if (off + sizeof(T) > b.size()) return false;
  std::memcpy(&out, b.data() + off, sizeof(T));
  return true;
}

}  // namespace

std::optional<CubinKernelInfo> cubin_kernel_info(const std::vector<char>& b, const std::string& entry) {
  Elf64_Ehdr eh;
  if (!read(b, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64)
    return std::nullopt;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  for (size_t i = 0; i < sh.size(); ++i)
    if (!read(b, eh.e_shoff + i * sizeof(Elf64_Shdr), sh[i])) return std::nullopt;
  if (eh.e_shstrndx >= sh.size()) return std::nullopt;
  auto str_at = [&](const Elf64_Shdr& tab, size_t off) -> std::string {
    const size_t at = tab.sh_offset + off;
    if (at >= b.size()) return {};
    return std::string(b.data() + at, strnlen(b.data() + at, b.size() - at));
  };

  // The entry's symbol index in .symtab.
  long entry_sym = -1;
  for (const auto& s : sh) {
    if (s.sh_type != SHT_SYMTAB || s.sh_link >= sh.size()) continue;
    for (size_t i = 0; i * sizeof(Elf64_Sym) < s.sh_size; ++i) {
      Elf64_Sym sym;
      if (!read(b, s.sh_offset + i * sizeof(Elf64_Sym), sym)) break;
      if (ELF64_ST_TYPE(sym.st_info) == STT_FUNC && str_at(sh[sh[&s - &sh[0]].sh_link], sym.st_name) == entry)
        entry_sym = long(i);
    }
  }
  if (entry_sym < 0) return std::nullopt;

  // Attributes naming the entry's symbol, in any .nv.info section.
  CubinKernelInfo info;
  for (const auto& s : sh) {
    if (str_at(sh[eh.e_shstrndx], s.sh_name).rfind(".nv.info", 0) != 0) continue;
    for (size_t off = s.sh_offset; off + 4 <= s.sh_offset + s.sh_size;) {
      unsigned char fmt = 0, attr = 0;
      std::uint16_t size = 0;
      read(b, off, fmt);
      read(b, off + 1, attr);
      read(b, off + 2, size);
      if (fmt != kFormatSval) { off += 4; continue; }
      std::uint32_t sym = 0, value = 0;
      if (size == 8 && read(b, off + 4, sym) && read(b, off + 8, value) && long(sym) == entry_sym) {
        if (attr == kAttrRegCount) info.registers = int(value);
        if (attr == kAttrFrameSize) info.frame_bytes = int(value);
      }
      off += 4 + size;
    }
  }
  return info;
}

}  // namespace attnc
