// Where the cache lives when nobody says: $ATTNC_CACHE_DIR/attnc.db, else
// $XDG_CACHE_HOME/attnc/attnc.db, else ~/.cache/attnc/attnc.db, and with no $HOME either
// ./.attnc-cache/attnc.db (relative to the working directory).
#pragma once

#include <string>

namespace attnc {

std::string default_cache_dir();
std::string default_cache_path();

// The rule above in one line, for --help texts.
inline constexpr const char* kDefaultCachePathHelp =
    "$ATTNC_CACHE_DIR/attnc.db, else $XDG_CACHE_HOME/attnc/attnc.db, else ~/.cache/attnc/attnc.db, "
    "else ./.attnc-cache/attnc.db when $HOME is unset";

}  // namespace attnc
