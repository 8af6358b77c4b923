// Internal: the Store's state, shared by the files that implement its calls.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cache/sql.h"
#include "cache/store.h"

namespace attnc {

struct Store::Impl {
  std::string path;
  OpenOptions options;

  bool writable() const { return options.mode == OpenMode::ReadWrite; }

  // A new connection with this store's pragmas; the schema is checked once, at open.
  // `new_file`: the file is missing or empty, so this connection may set how it is created.
  std::unique_ptr<sql::Conn> connect(bool new_file = false) const;

  // A connection borrowed from the pool for one call; back to the pool when it goes out of scope.
  // Connections are never shared between threads at the same time, so they are opened NOMUTEX.
  class Borrowed {
   public:
    Borrowed(Impl& impl, std::unique_ptr<sql::Conn> conn) : impl_(impl), conn_(std::move(conn)) {}
    Borrowed(const Borrowed&) = delete;
    Borrowed& operator=(const Borrowed&) = delete;
    ~Borrowed();
    sql::Conn& operator*() const { return *conn_; }
    sql::Conn* operator->() const { return conn_.get(); }

   private:
    Impl& impl_;
    std::unique_ptr<sql::Conn> conn_;
  };
  Borrowed borrow();

  std::mutex mutex;  // guards idle
  std::vector<std::unique_ptr<sql::Conn>> idle;
};

}  // namespace attnc
