// Sub-commands of the `ember` tool; each registers itself on the CLI11 app.
#pragma once
#include <CLI/CLI.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/device.h"

namespace ember::tools {
void add_devices_command(CLI::App& app);
/// ember train mnist|fashion-mnist|images [...] (images: --data DIR, image_data.h):
/// tools/train.cpp.
void add_train_command(CLI::App& app);
/// ember eval --checkpoint FILE: tools/infer.cpp.
void add_eval_command(CLI::App& app);
/// ember predict --checkpoint FILE IMAGE: tools/infer.cpp.
void add_predict_command(CLI::App& app);
/// ember run MODEL.onnx ..., ember onnx info | conformance: tools/onnx.cpp (EMBER_HAVE_ONNX).
void add_onnx_commands(CLI::App& app);

namespace detail {
/// add_int_option's check of `s`: "" when valid (then `s` is canonical decimal), else why not.
template <typename T>
std::string check_int(std::string& s, T min, T max) {
  T v{};
  const char* end = s.data() + s.size();
  const bool plus = s.size() > 1 && s[0] == '+' && s[1] != '-';
  const auto [p, ec] = std::from_chars(s.data() + (plus ? 1 : 0), end, v);
  const bool no_max = max == std::numeric_limits<T>::max();
  const std::string range =
      "(must be " +
      (no_max ? ">= " + std::to_string(min) : std::to_string(min) + " to " + std::to_string(max)) +
      ")";
  // Past the type's range: the option's own range, as for any other value outside it (it said
  // the type's, -9223372036854775808 to 9223372036854775807, which --epochs does not accept).
  if (ec == std::errc::result_out_of_range) return "value " + s + " is out of range " + range;
  if (ec != std::errc() || p != end || s.empty())
    return "value " + s + " is not " +
           (std::is_signed_v<T> ? "an integer" : "a non-negative integer");
  if (v < min || v > max) return "value " + std::to_string(v) + " is out of range " + range;
  s = std::to_string(v);
  return "";
}
}  // namespace detail

/// An integer option read exactly: decimal digits (a '-' only for signed T) in [min, max], else a
/// usage error naming the option ("--epochs: value 0 is out of range (must be >= 1)"). CLI11
/// 2.1 reads integers with strtoll/strtoull and does not check their range (--epochs
/// 99999999999999999999 became INT64_MAX, --seed -1 became 2^64 - 1), and with base 0 ("010"
/// was 8); the value is handed on in canonical decimal.
template <typename T>
CLI::Option* add_int_option(CLI::App* cmd, const std::string& name, T& value,
                            const std::string& description, T min = std::numeric_limits<T>::min(),
                            T max = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T>);
  CLI::Option* opt = cmd->add_option(name, value, description);
  opt->transform(CLI::Validator(
      [min, max, name, opt](std::string& s) -> std::string {
        const std::string why = detail::check_int(s, min, max);
        // CLI11 gives a hidden option (empty group) no name in its error (": value ..."): say
        // it here (main.cpp drops the empty one).
        return why.empty() || !opt->get_group().empty() ? why : name + ": " + why;
      },
      "", ""));
  return opt;
}

/// A real-number option's check: the whole value a finite decimal number strictly between `lo`
/// and `hi` ("value 1.5 is out of range (must be > 0 and < 1)"), else a usage error naming the
/// option. `range` says the range in words.
inline CLI::Validator real_between(double lo, double hi, const std::string& range) {
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || *end != '\0' || std::isspace(static_cast<unsigned char>(s[0])))
          return "value " + s + " is not a number";
        if (!(v > lo && v < hi) || !std::isfinite(v))
          return "value " + s + " is out of range (must be " + range + ")";
        return "";
      },
      "", "");
}

/// A path option's check: an empty value ("--data \"\"") is a usage error naming the option
/// (it read as the option not given, or failed later with a message about "").
inline CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& s) -> std::string { return s.empty() ? "the path is empty" : ""; }, "", "");
}

/// --device: a name Device::parse knows (cpu, ref, vulkan, vulkan:N, vulkan:KIND, cuda:N), else a
/// usage error. Whether the device can run is found out when the command opens it (an error).
/// Not given (value ""): the library's default device, Device::default_device() (EMBER_DEVICE,
/// else cpu).
CLI::Option* add_device_option(CLI::App* cmd, std::string& value);
/// --device DEVICE... (ember onnx conformance): each value checked as add_device_option's; `what`
/// heads the help text.
CLI::Option* add_devices_option(CLI::App* cmd, std::vector<std::string>& values,
                                const std::string& what);
/// The device --device names, or the default one when it was not given (device_of("")).
Device device_of(const std::string& value);

/// --max-image-pixels N, on a command that decodes images: the largest image (width x height)
/// it accepts, data::set_max_image_pixels (default data::kDefaultMaxImagePixels; 0: no limit).
/// tools/image_data.cpp.
CLI::Option* add_max_image_pixels_option(CLI::App* cmd);

/// The exit statuses of every command (also in `ember --help` and README.md).
inline constexpr int kExitUsage = 2;          ///< "error: <what>" + "Run with --help ..."
inline constexpr int kExitFailure = 1;        ///< "error: [<tag>] <what>"
inline constexpr int kExitInterrupted = 130;  ///< ember train stopped by Ctrl-C (128 + SIGINT)
/// ember eval / predict: the model's output is not a number (NaN or infinite: its weights are),
/// so the figures printed are meaningless; a warning on stderr says so.
inline constexpr int kExitNotANumber = 3;
}  // namespace ember::tools
