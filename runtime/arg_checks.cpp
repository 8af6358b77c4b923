#include "runtime/arg_checks.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace attnc {

void ArgCheck::fail(const std::string& what) const { throw BadCall(op_ + ": " + what); }

void ArgCheck::pointer(const std::string& name, const void* p, int align) const {
  require(p != nullptr, name + " is null");
  require(reinterpret_cast<std::uintptr_t>(p) % align == 0,
          name + " must be " + str(align) + "-byte aligned" + (align >= 8 ? " (vector access)" : ""));
}

void ArgCheck::strides(const std::string& name, std::initializer_list<long long> s, int multiple,
                       int element_bytes) const {
  for (long long v : s) {
    require(v > 0, name + " strides must be positive, got " + str(v));
    require(v % multiple == 0, name + " strides must be multiples of " + str(multiple) + " elements (" +
                                   str(multiple * element_bytes) + " bytes), got " + str(v));
  }
}

// Sufficient test: taking the dimensions by increasing stride, each stride must clear everything
// the smaller ones reach (one-row dimensions do not count).
void ArgCheck::disjoint(const std::string& name, long long width, std::initializer_list<Dim> dims) const {
  std::vector<Dim> d;
  for (const Dim& x : dims)
    if (x.count > 1) d.push_back(x);
  std::stable_sort(d.begin(), d.end(), [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
  long long reach = width;  // elements covered by one index of the dimensions so far
  std::string covered = "rows of " + str(width) + " elements";
  for (const Dim& x : d) {
    require(x.stride >= reach, name + " overlaps itself: " + x.name + " stride " + str(x.stride) + " (x" +
                                   str(x.count) + ") < " + str(reach) + ", the span of " + covered);
    reach += x.stride * (x.count - 1);
    covered += std::string(" and the ") + x.name + " stride " + str(x.stride) + " (x" + str(x.count) + ")";
  }
}

}  // namespace attnc
