// Environment variables (env.h): one parser, one warning format, one policy.
#include "core/env.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <set>

#include "ember/error.h"

namespace ember {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string env_string(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

void warn_once(const std::string& key, const std::string& line) {
  static std::mutex mu;
  static std::set<std::string> warned;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!warned.insert(key).second) return;
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

void env_warn(const char* name, const std::string& value, const std::string& what,
              const std::string& fallback) {
  const std::string key = std::string(name) + "=" + value;
  warn_once("[env] " + key,
            "warning: [env] " + key + " is not " + what + "; using the default " + fallback);
}

void warn_cache_unwritable(const char* name, const char* tag, const std::string& path,
                           const std::string& why, const std::string& effect) {
  warn_once(std::string("[cache] ") + name,
            std::string("warning: [") + tag + "] cannot write " + path + ": " + why + "; " +
                effect + " (set " + name + " to a writable folder, or to 0 for no cache)");
}

std::optional<bool> parse_env_flag(const std::string& s) {
  const std::string l = lower(s);
  if (l == "1" || l == "on" || l == "true" || l == "yes") return true;
  if (l == "0" || l == "off" || l == "false" || l == "no") return false;
  return std::nullopt;
}

std::optional<int64_t> parse_env_int(const std::string& s) {
  const bool plus = s.size() > 1 && s[0] == '+' && s[1] != '-';
  const char* begin = s.data() + (plus ? 1 : 0);
  const char* end = s.data() + s.size();
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(begin, end, v);
  if (s.empty() || ec != std::errc() || p != end) return std::nullopt;
  return v;
}

bool env_flag(const char* name, bool def) {
  const std::string v = env_string(name);
  if (v.empty()) return def;
  if (std::optional<bool> b = parse_env_flag(v)) return *b;
  env_warn(name, v, "a flag (1/0, on/off, true/false, yes/no)", def ? "'on'" : "'off'");
  return def;
}

int64_t env_int(const char* name, int64_t def, int64_t min, int64_t max) {
  const std::string range =
      max == std::numeric_limits<int64_t>::max()
          ? "an integer >= " + std::to_string(min)
          : "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  // Checked whether or not the variable is set: the caller's bug shows in every run and test.
  if (def < min || def > max)
    EMBER_FAIL("env", name, ": the default ", def, " is not ", range,
               " (a bug in Ember: the caller's default must be an allowed value)");
  const std::string v = env_string(name);
  if (v.empty()) return def;
  const std::optional<int64_t> n = parse_env_int(v);
  if (n && *n >= min && *n <= max) return *n;
  env_warn(name, v, range, std::to_string(def));
  return def;
}

std::string env_choice(const char* name, std::initializer_list<const char*> allowed,
                       const std::string& def) {
  std::string list;
  bool def_allowed = false;
  for (const char* a : allowed) {
    list += (list.empty() ? "" : "|") + std::string(a);
    def_allowed |= def == a;
  }
  // Checked whether or not the variable is set: the caller's bug shows in every run and test.
  if (!def_allowed)
    EMBER_FAIL("env", name, ": the default '", def, "' is not one of ", list,
               " (a bug in Ember: the caller's default must be an allowed value)");
  const std::string v = env_string(name);
  if (v.empty()) return def;
  for (const char* a : allowed)
    if (lower(v) == lower(a)) return a;
  env_warn(name, v, "one of " + list, "'" + def + "'");
  return def;
}

std::string env_cache_dir(const char* name, const char* sub) {
  const std::string v = env_string(name);
  if (!v.empty()) return parse_env_flag(v) == std::optional<bool>(false) ? std::string() : v;
  if (const std::string x = env_string("XDG_CACHE_HOME"); !x.empty()) return x + "/ember/" + sub;
  if (const std::string h = env_string("HOME"); !h.empty()) return h + "/.cache/ember/" + sub;
  return "";
}

}  // namespace ember
