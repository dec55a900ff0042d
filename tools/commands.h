// Sub-commands of the `ember` tool; each registers itself on the CLI11 app.
#pragma once
#include <CLI/CLI.hpp>

#include <charconv>
#include <limits>
#include <string>
#include <type_traits>

namespace ember::tools {
void add_devices_command(CLI::App& app);
/// ember train mnist|fashion-mnist|images [...] (images: --data DIR, image_data.h):
/// tools/train.cpp.
void add_train_command(CLI::App& app);
/// ember eval --checkpoint FILE: tools/infer.cpp.
void add_eval_command(CLI::App& app);
/// ember predict --checkpoint FILE IMAGE: tools/infer.cpp.
void add_predict_command(CLI::App& app);

/// An integer option read exactly: decimal digits (a '-' only for signed T) in T's range, else a
/// usage error naming the option. CLI11 2.1 reads integers with strtoll/strtoull and does not
/// check their range (--epochs 99999999999999999999 became INT64_MAX, --seed -1 became 2^64 - 1),
/// and with base 0 ("010" was 8); the value is handed on in canonical decimal.
template <typename T>
CLI::Option* add_int_option(CLI::App* cmd, const std::string& name, T& value,
                            const std::string& description) {
  static_assert(std::is_integral_v<T>);
  CLI::Option* opt = cmd->add_option(name, value, description);
  opt->transform(CLI::Validator(
      [](std::string& s) -> std::string {
        T v{};
        const char* end = s.data() + s.size();
        const bool plus = s.size() > 1 && s[0] == '+' && s[1] != '-';
        const auto [p, ec] = std::from_chars(s.data() + (plus ? 1 : 0), end, v);
        if (ec == std::errc::result_out_of_range)
          return "value " + s + " is out of range (" +
                 std::to_string(std::numeric_limits<T>::min()) + " to " +
                 std::to_string(std::numeric_limits<T>::max()) + ")";
        if (ec != std::errc() || p != end || s.empty())
          return "value " + s + " is not " +
                 (std::is_signed_v<T> ? "an integer" : "a non-negative integer");
        s = std::to_string(v);
        return "";
      },
      "", ""));
  return opt;
}
}  // namespace ember::tools
