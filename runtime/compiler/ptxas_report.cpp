#include "runtime/compiler/ptxas_report.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string_view>

namespace attnc {
namespace {

// The integer right before `suffix` in `line` ("1040 bytes stack frame" -> 1040), or -1.
int number_before(std::string_view line, std::string_view suffix) {
  const auto at = line.find(suffix);
  if (at == std::string_view::npos) return -1;
  auto end = at;
  while (end > 0 && line[end - 1] == ' ') --end;
  auto begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  if (begin == end) return -1;
  return std::atoi(std::string(line.substr(begin, end - begin)).c_str());
}

bool starts_entry(std::string_view line) { return line.find("Compiling entry function '") != std::string_view::npos; }

}  // namespace

PtxasReport parse_ptxas_report(const std::string& log, const std::string& entry) {
  PtxasReport r;
  const std::string header = "Compiling entry function '" + entry + "'";
  std::istringstream in(log);
  std::string line;
  bool inside = false;       // within this entry's block
  bool own_props = false;    // the "Function properties" lines are about the entry, not a callee
  while (std::getline(in, line)) {
    if (!inside) {
      if (line.find(header) == std::string::npos) continue;
      inside = true;
      r.registers = 0;
      r.smem_bytes = 0;
    } else if (starts_entry(line)) {
      break;
    }
    r.raw += line + "\n";
    if (line.find("Function properties for ") != std::string::npos) {
      own_props = line.substr(line.find("Function properties for ") + 24) == entry;
    } else if (own_props && line.find("bytes stack frame") != std::string::npos) {
      r.stack_bytes = std::max(0, number_before(line, "bytes stack frame"));
      r.spill_stores = std::max(0, number_before(line, "bytes spill stores"));
      r.spill_loads = std::max(0, number_before(line, "bytes spill loads"));
    } else if (line.find("Used ") != std::string::npos && line.find(" registers") != std::string::npos) {
      r.registers = std::max(0, number_before(line, "registers"));
      r.barriers = std::max(0, number_before(line, "barriers"));
      r.smem_bytes = std::max(0, number_before(line, "bytes smem"));
    }
  }
  return r;
}

double ptxas_compile_ms(const std::string& log) {
  static constexpr std::string_view kMarker = "Compile time = ";
  double total = 0;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    const auto at = line.find(kMarker);
    if (at != std::string::npos && line.find(" ms", at) != std::string::npos)
      total += std::strtod(line.c_str() + at + kMarker.size(), nullptr);
  }
  return total;
}

}  // namespace attnc
