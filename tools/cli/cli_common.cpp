#include "tools/cli/cli_common.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cache/cache_path.h"
#include "runtime/driver/device.h"

namespace fs = std::filesystem;

namespace attnc::cli {

std::vector<std::string> expand_spec_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& e : fs::directory_iterator(p)) {
        const auto ext = e.path().extension();
        if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) found.push_back(e.path().string());
      }
      if (found.empty()) throw Failed(p + ": no *.yaml specs in this folder");
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else {
      out.push_back(p);  // load_spec reports a missing or unusable file; the others still run
    }
  }
  return out;
}

CLI::Validator at_least_one() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        try {
          size_t used = 0;
          if (std::stoll(v, &used) >= 1 && used == v.size()) return "";
        } catch (const std::exception&) {
        }
        return "must be a whole number of at least 1, got '" + v + "'";
      },
      "N>=1");
}

std::string default_arch() {
  if (Device::count() > 0) return Device(0).arch();
  return "sm_90a";
}

std::string resolve_db(const std::string& db) {
  if (!db.empty()) return db;
  const std::string dir = default_cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Failed("cannot create the cache folder " + dir + ": " + ec.message() +
                       " (set ATTNC_CACHE_DIR or pass --db)");
  return default_cache_path();
}

void Table::print(std::FILE* out) const {
  std::vector<size_t> width;
  for (const auto& r : rows_)
    for (size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], r[i].size());
    }
  for (size_t n = 0; n < rows_.size(); ++n) {
    std::string line;
    for (size_t i = 0; i < rows_[n].size(); ++i) {
      std::string cell = rows_[n][i];
      if (i + 1 < rows_[n].size()) cell.resize(width[i], ' ');
      line += (i ? "  " : "") + cell;
    }
    std::fprintf(out, "%s\n", line.c_str());
  }
}

std::string fmt(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

void print_json(const nlohmann::ordered_json& j) {
  // A spec's name (and so a key or a message) may hold any bytes; bytes that are not UTF-8 become
  // U+FFFD rather than an exception after the work is done.
  std::cout << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << std::endl;
}

}  // namespace attnc::cli
