// Internal: what a path holds, decided before anything is written to it, and how to open a file
// for reading without leaving -wal/-shm files behind where that can be avoided.
//
// A foreign SQLite file must never be modified, and switching a file to WAL mode (the first thing a
// read-write connection does) is a modification. So the raw 100-byte header is read first, with
// plain file I/O (https://www.sqlite.org/fileformat.html#the_database_header): attnc's
// application_id marks the file as ours; any other application_id or user_version marks it foreign.
// Only a header with neither (a fresh or half-created cache, or another program's database) is
// opened through SQLite, read-only, to count its tables.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cache/sql.h"

namespace attnc::file_state {

enum class Kind {
  Missing,       // no file yet
  Empty,         // 0 bytes, or an SQLite file with no tables, no user_version, no application_id
  Ours,          // attnc's application_id (the schema version is checked later)
  Foreign,       // another program's SQLite database
  NotADatabase,  // no SQLite header
};

struct State {
  Kind kind = Kind::Missing;
  std::int64_t application_id = 0;
};

State inspect(const std::string& path, int busy_timeout_ms);

// Whether the file's header says WAL mode (what a cache is, even where a reader opened as
// immutable sees "delete").
bool wal_mode(const std::string& path);

// Whether the file, and the directory that holds it, may be written by this process.
bool file_writable(const std::string& path);
bool dir_writable(const std::string& path);

// A connection that only reads the existing file at `path`:
//  - our own cache in a place we may write: an ordinary read-write connection with query_only on,
//    so that the last connection to close removes -wal and -shm as SQLite always does;
//  - a WAL-mode file without a -wal file whose directory we cannot write, or that nobody may
//    write (no write permission bits), or that is not ours: immutable=1. No -wal means no
//    connection has it open, and a WAL writer would first have to create -wal (or chmod the
//    file), so nothing changes under us; SQLite then needs no -wal or -shm;
//  - otherwise a plain read-only connection (it uses the -wal/-shm present, or creates them).
std::unique_ptr<sql::Conn> open_reader(const std::string& path, int busy_timeout_ms, bool ours);

}  // namespace attnc::file_state
