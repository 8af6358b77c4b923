// Turns NVRTC's "name(LINE): error: ..." log lines into the lines they point at, taken from the
// generated source or from the embedded header of that name, with line numbers. The log alone
// shows the text of a line but not its number, and never the lines around it.
#pragma once

#include <string>
#include <vector>

namespace attnc::detail {

struct ErrorLocation {
  std::string file;   // program name or header path, as the log spells it
  int line = 0;       // 1-based
  std::string excerpt;  // the line with one line of context on each side, numbered, the line marked
};

// At most `limit` distinct locations, in log order. Errors in files we do not have (nothing else
// is handed to NVRTC, but be safe) get an empty excerpt.
std::vector<ErrorLocation> error_locations(const std::string& log, const std::string& program_name,
                                           const std::string& source, size_t limit = 10);

}  // namespace attnc::detail
