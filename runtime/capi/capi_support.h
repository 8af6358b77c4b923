// What every C API function shares (c_api.cpp, c_api_ops.cpp): the thread-local error message,
// exceptions turned into status codes, and reading and writing the caller's versioned structs
// (struct_size: only the bytes both the caller's header and the library know).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "include/attnc.h"
#include "runtime/dispatch/dispatcher.h"

struct attnc_attention {
  std::unique_ptr<attnc::Attention> attention;
};

namespace attnc::capi {

// Sets the calling thread's message and returns `code`.
int fail(int code, std::string message);
const char* last_error();

// Maps the exception in flight to a status; call only inside a catch block. A BadCall's message
// is prefixed with `call` ("attention call", "merge_attn_states call", ...).
int fail_current(const char* call = "attention call");

// `text` and its NUL into the caller's buffer of `size` bytes; ATTNC_ERR_BUFFER_TOO_SMALL saying
// how many it needs.
int copy_out(const std::string& text, char* out, size_t size);

// has_init: the struct has a *_init, which needs struct_size set first.
int check_size(const char* what, size_t got, size_t need, bool has_init = true);

// A caller's struct holds struct_size bytes (its header's sizeof): fewer than the library's when
// built against an older header, more against a newer one. The library reads and writes only the
// bytes both know, so it never touches memory past the caller's struct.
template <class T>
size_t shared_bytes(const T& caller) {
  return std::min(caller.struct_size, sizeof(T));
}

// `full` into the caller's struct (whose struct_size is checked): the bytes both know, struct_size
// left as the caller's.
template <class T>
void write_struct(T full, T* out) {
  full.struct_size = out->struct_size;
  std::memcpy(out, &full, shared_bytes(*out));
}

// *_init: the defaults into the caller's struct.
template <class T>
int init_struct(const char* what, T* out, size_t v1, void (*defaults)(T&)) {
  if (!out) return fail(ATTNC_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
  if (int rc = check_size(what, out->struct_size, v1)) return rc;
  T full;
  defaults(full);
  write_struct(full, out);
  return ATTNC_OK;
}

// The caller's struct as the library's: the defaults, overwritten by the bytes the caller has.
template <class T>
int read_struct(const char* what, const T& in, size_t v1, void (*defaults)(T&), T* out) {
  if (int rc = check_size(what, in.struct_size, v1)) return rc;
  defaults(*out);
  std::memcpy(out, &in, shared_bytes(in));
  return ATTNC_OK;
}

}  // namespace attnc::capi
