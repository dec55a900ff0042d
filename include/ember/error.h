// ember::Error and the check macros every public function uses.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace ember {

/// The one exception type Ember throws. The message starts with the op tag, e.g.
/// "[matmul] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)".
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

namespace detail {
inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& v, const Rest&... rest) {
  os << v;
  append(os, rest...);
}
template <typename... Args>
[[noreturn]] void fail(const char* op, const Args&... args) {
  std::ostringstream os;
  os << '[' << op << "] ";
  append(os, args...);
  throw Error(os.str());
}
}  // namespace detail

}  // namespace ember

/// Throws ember::Error("[op] " + message pieces) when cond is false.
#define EMBER_CHECK(cond, op, ...)                       \
  do {                                                   \
    if (!(cond)) ::ember::detail::fail(op, __VA_ARGS__); \
  } while (0)
#define EMBER_FAIL(op, ...) ::ember::detail::fail(op, __VA_ARGS__)
