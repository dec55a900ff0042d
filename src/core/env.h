// The one reader of environment variables (internal; every EMBER_* setting goes through it).
//
// Policy:
//  - Unset or empty: the default, silently.
//  - A tuning knob or debug switch (EMBER_STREAM_OPS, EMBER_FUSION, EMBER_CHECK, EMBER_AUTOTUNE,
//    EMBER_NUM_THREADS, EMBER_*_MAX_TASKS, EMBER_GEMM, ...) with a value that does not parse or is
//    out of range: a warning on stderr, once per variable and value, naming the default that is
//    used instead, then the default:
//      warning: [env] EMBER_STREAM_OPS=abc is not an integer in [1, 1000000]; using the default 256
//      warning: [env] EMBER_AUTOTUNE=bogus is not one of off|minimal|balanced|full; using the
//      default 'balanced'
//  - A caller's default that is not itself allowed (outside [min, max], not one of the choices)
//    is a bug in Ember: env_int and env_choice throw ember::Error naming the variable, whether or
//    not it is set.
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

/// A boolean switch; `def` when unset or empty, or (with a warning "...; using the default 'on'")
/// when not a flag word.
bool env_flag(const char* name, bool def);

/// An integer in [min, max]; `def` when unset or empty, or (with a warning naming the range and
/// "using the default <def>") when not one. Throws ember::Error naming `name` when `def` itself
/// is outside [min, max] (a bug in the caller), even when the variable is unset.
int64_t env_int(const char* name, int64_t def, int64_t min, int64_t max);

/// One of `allowed` (matched in any case; the allowed spelling is returned); `def` when unset or
/// empty, or (with a warning listing the allowed values and "using the default '<def>'") when
/// another value. Throws ember::Error naming `name` when `def` is not exactly one of `allowed` (a
/// bug in the caller), even when the variable is unset.
std::string env_choice(const char* name, std::initializer_list<const char*> allowed,
                       const std::string& def);

/// A cache folder: `name`'s value ("" when it is a false flag word, 0/off/false/no: no cache),
/// else $XDG_CACHE_HOME/ember/<sub>, else $HOME/.cache/ember/<sub>, else "".
std::string env_cache_dir(const char* name, const char* sub);

/// "warning: [env] NAME=value is not <what>; using the default <fallback>" on stderr, once per
/// variable and value (a setting read at every call warns once). `fallback` is written as given
/// (the callers quote words: "'balanced'").
void env_warn(const char* name, const std::string& value, const std::string& what,
              const std::string& fallback);

/// `line` (without its newline) on stderr the first time this process passes `key`; later calls
/// with the same key print nothing. Thread-safe.
void warn_once(const std::string& key, const std::string& line);

/// A cache file under the folder `name` chose (env_cache_dir) could not be written: once per
/// process and variable, "warning: [<tag>] cannot write <path>: <why>; <effect> (set <name> to a
/// writable folder, or to 0 for no cache)" on stderr. An unwritable cache is not an error (it
/// only costs time), but is not silent either.
void warn_cache_unwritable(const char* name, const char* tag, const std::string& path,
                           const std::string& why, const std::string& effect);

/// The parsers behind env_flag / env_int: nullopt when `s` is not a flag word / not a decimal
/// integer that fits int64_t.
std::optional<bool> parse_env_flag(const std::string& s);
std::optional<int64_t> parse_env_int(const std::string& s);

}  // namespace ember
