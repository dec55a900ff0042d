// The one reader of environment variables (internal; every EMBER_* setting goes through it).
//
// Policy:
//  - Unset or empty: the default, silently.
//  - A tuning knob or debug switch (EMBER_STREAM_OPS, EMBER_FUSION, EMBER_CHECK, EMBER_AUTOTUNE,
//    EMBER_NUM_THREADS, EMBER_*_MAX_TASKS, EMBER_GEMM, ...) with a value that does not parse or is
//    out of range: a warning on stderr, once per variable and value, then the default:
//      warning: [env] EMBER_STREAM_OPS=abc is not an integer in [1, 1000000]; using 256
//    A typo in a knob must not stop a long run, nor be ignored without a word.
//  - A variable that selects a device (EMBER_DEVICE, EMBER_VULKAN_DEFAULT_DEVICE) is read with
//    env_string and a bad value is an ember::Error naming the variable and its value: running on
//    another device than the one asked for is worse than stopping.
// Flags accept 1/0, on/off, true/false, yes/no in any case; integers are decimal, the whole
// string, without overflow (a leading '+' is accepted); choices match in any case.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace ember {

/// The variable's value; "" when it is unset or empty.
std::string env_string(const char* name);

/// A boolean switch; `def` when unset or empty, or (with a warning) when not a flag word.
bool env_flag(const char* name, bool def);

/// An integer in [min, max]; `def` when unset or empty, or (with a warning) when not one.
int64_t env_int(const char* name, int64_t def, int64_t min, int64_t max);

/// One of `allowed` (matched in any case; the allowed spelling is returned); `def` when unset or
/// empty, or (with a warning listing the allowed values) when another value.
std::string env_choice(const char* name, std::initializer_list<const char*> allowed,
                       const std::string& def);

/// A cache folder: `name`'s value ("" when it is a false flag word, 0/off/false/no: no cache),
/// else $XDG_CACHE_HOME/ember/<sub>, else $HOME/.cache/ember/<sub>, else "".
std::string env_cache_dir(const char* name, const char* sub);

/// "warning: [env] NAME=value is not <what>; using <fallback>" on stderr, once per variable and
/// value (a setting read at every call warns once).
void env_warn(const char* name, const std::string& value, const std::string& what,
              const std::string& fallback);

/// The parsers behind env_flag / env_int: nullopt when `s` is not a flag word / not a decimal
/// integer that fits int64_t.
std::optional<bool> parse_env_flag(const std::string& s);
std::optional<int64_t> parse_env_int(const std::string& s);

}  // namespace ember
