// Where the cache lives when nobody says: $ATTNC_CACHE_DIR/attnc.db, else
// $XDG_CACHE_HOME/attnc/attnc.db, else ~/.cache/attnc/attnc.db.
#pragma once

#include <string>

namespace attnc {

std::string default_cache_dir();
std::string default_cache_path();

}  // namespace attnc
