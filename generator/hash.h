// Stable content hashing (XXH3-128, from Debian's libxxhash): spec ids, kernel keys, template hash.
// Not cryptographic: keys address our own cache, they are not a security boundary.
#pragma once

#include <string>
#include <string_view>

namespace attnc {

// 32 lowercase hex digits.
std::string hash_hex(std::string_view data);

// Incremental form for hashing several fields without concatenating them; each add() is
// length-prefixed so ("ab","c") and ("a","bc") differ.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  Hasher& add(std::string_view field);
  std::string hex() const;

 private:
  void* state_;
};

}  // namespace attnc
