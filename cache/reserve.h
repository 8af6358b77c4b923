// Internal: room set aside beside the database (<db>-reserve) so that `gc`, the remedy for a full
// disk, can run when the file system has no byte left: gc deletes the reserve, deletes kernels,
// gives their pages back (incremental vacuum, then a truncating checkpoint), and makes the reserve
// again once there is room.
#pragma once

#include <cstdint>
#include <string>

namespace attnc::reserve {

std::string path_for(const std::string& db);
// Creates the reserve, or tops it up, to `bytes`, where the file system keeps at least half as
// much free besides; best effort (a nearly full disk goes without).
void ensure(const std::string& db, std::int64_t bytes);
// Deletes it; returns whether it held any room.
bool release(const std::string& db);

}  // namespace attnc::reserve
