// ember_fuzz: a deterministic mutation fuzzer for Ember's readers (tests/fuzz/targets.cpp).
//
//   ember_fuzz TARGET [--runs N] [--seed S] [--max-alloc-mb M] [--timeout-s T]
//   ember_fuzz TARGET --input FILE      (replays one input, e.g. a saved failure)
//   ember_fuzz --list
//
// Each run mutates one seed (bit flips, interesting integers, truncation, cut/duplicated/spliced
// ranges, tokens for text formats) with a generator seeded by (S, run), so a run number
// reproduces its input. A failure is anything but a clean ember::Error: another exception, an
// allocation of more than M MiB (operator new and aligned_alloc here; malloc under ASan via
// ASAN_OPTIONS=max_allocation_size_mb), or an input running past T seconds (a hang). The
// failing input is written to fuzz-failures/<target>-<run>.bin and the exit status is 1.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "ember/data/io.h"
#include "ember/error.h"
#include "fuzz/fuzz.h"

namespace {

// ---- the allocation budget ----
constexpr size_t kUnlimited = size_t(1) << 62;
std::atomic<size_t> g_max_alloc{kUnlimited};
std::atomic<size_t> g_over{0};  // the first allocation over the budget in this input, or 0

void* checked(size_t n, size_t align) {
  if (n > g_max_alloc.load(std::memory_order_relaxed)) {
    size_t zero = 0;
    g_over.compare_exchange_strong(zero, n);
    return nullptr;
  }
  using AlignedAlloc = void* (*)(size_t, size_t);
  static const AlignedAlloc next =
      reinterpret_cast<AlignedAlloc>(dlsym(RTLD_NEXT, "aligned_alloc"));
  if (align <= alignof(std::max_align_t)) return std::malloc(n ? n : 1);
  return next(align, (n + align - 1) / align * align);
}
void* new_or_throw(size_t n, size_t align) {
  void* p = checked(n, align);
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace

// Ember's tensor storage comes from aligned_alloc; containers from operator new.
extern "C" void* aligned_alloc(size_t align, size_t n) { return checked(n, align); }
void* operator new(size_t n) { return new_or_throw(n, 0); }
void* operator new[](size_t n) { return new_or_throw(n, 0); }
void* operator new(size_t n, std::align_val_t a) { return new_or_throw(n, size_t(a)); }
void* operator new[](size_t n, std::align_val_t a) { return new_or_throw(n, size_t(a)); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return checked(n, 0); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return checked(n, 0); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

using ember::fuzz::Target;

// ---- mutations ----
struct Mutator {
  std::mt19937_64 rng;
  const std::vector<std::string>& seeds;
  bool text;

  size_t below(size_t n) { return n ? size_t(rng() % n) : 0; }

  std::string interesting_int() {
    static const int64_t values[] = {0,
                                     1,
                                     -1,
                                     2,
                                     127,
                                     128,
                                     255,
                                     256,
                                     32767,
                                     65535,
                                     65536,
                                     2147483647,
                                     -2147483648LL,
                                     4294967295LL,
                                     int64_t(1) << 40,
                                     INT64_MAX,
                                     INT64_MIN};
    const int64_t v = values[below(sizeof values / sizeof values[0])];
    const size_t width = size_t(1) << below(4);  // 1, 2, 4 or 8 bytes
    std::string out(width, '\0');
    const bool big_endian = rng() & 1;  // IDX is big-endian, safetensors little-endian
    for (size_t i = 0; i < width; ++i)
      out[big_endian ? width - 1 - i : i] = char(uint64_t(v) >> (8 * i));
    return out;
  }

  std::string token() {
    static const char* tokens[] = {"0",
                                   "-1",
                                   "9223372036854775807",
                                   "18446744073709551616",
                                   "1e308",
                                   "-1e400",
                                   "nan",
                                   "inf",
                                   "\"",
                                   ",",
                                   ";",
                                   "\n",
                                   "\r\n",
                                   "[",
                                   "]",
                                   "{",
                                   "}",
                                   ":",
                                   "\"\"",
                                   " ",
                                   "\\u0000",
                                   "F32",
                                   "I64",
                                   "BF16",
                                   "shape",
                                   "data_offsets",
                                   "dtype",
                                   "__metadata__",
                                   "4294967296",
                                   "0.5",
                                   "-0",
                                   "e",
                                   "null"};
    return tokens[below(sizeof tokens / sizeof tokens[0])];
  }

  void mutate_once(std::string& s) {
    const size_t n = s.size();
    switch (below(text ? 10 : 8)) {
      case 0:  // flip a bit
        if (n) s[below(n)] ^= char(1u << below(8));
        break;
      case 1: {  // set a byte
        static const unsigned char bytes[] = {0, 1, 0x7f, 0x80, 0xff, 0x08, 0x0d, 0x1f};
        if (n) s[below(n)] = char(rng() & 1 ? bytes[below(sizeof bytes)] : char(rng()));
        break;
      }
      case 2: {  // overwrite with an interesting integer
        const std::string v = interesting_int();
        if (n >= v.size()) s.replace(below(n - v.size() + 1), v.size(), v);
        break;
      }
      case 3:  // truncate
        s.resize(below(n + 1));
        break;
      case 4: {  // cut a range
        const size_t at = below(n + 1);
        s.erase(at, below(std::min<size_t>(n - at, 64) + 1));
        break;
      }
      case 5: {  // duplicate a range
        const size_t at = below(n + 1);
        const std::string piece = s.substr(at, below(std::min<size_t>(n - at, 64) + 1));
        s.insert(below(s.size() + 1), piece);
        break;
      }
      case 6: {  // splice: this input's head, another seed's tail
        const std::string& other = seeds[below(seeds.size())];
        s = s.substr(0, below(n + 1)) + other.substr(below(other.size() + 1));
        break;
      }
      case 7: {  // insert random bytes
        std::string r(below(8) + 1, '\0');
        for (char& c : r) c = char(rng());
        s.insert(below(n + 1), r);
        break;
      }
      case 8:  // insert a token
        s.insert(below(n + 1), token());
        break;
      default: {  // replace a digit
        std::vector<size_t> digits;
        for (size_t i = 0; i < n; ++i)
          if (s[i] >= '0' && s[i] <= '9') digits.push_back(i);
        if (!digits.empty()) s[digits[below(digits.size())]] = char('0' + below(10));
        break;
      }
    }
  }

  std::string next() {
    std::string s = seeds[below(seeds.size())];
    const size_t count = 1 + below(rng() & 1 ? 2 : 8);
    for (size_t i = 0; i < count; ++i) mutate_once(s);
    return s;
  }
};

// ---- the hang watchdog ----
std::atomic<int64_t> g_started_ms{-1};  // when the current input began, -1 between inputs
std::string g_current_target;
int64_t g_current_run = -1;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void save_failure(const std::string& target, int64_t run, const std::string& bytes) {
  std::filesystem::create_directories("fuzz-failures");
  const std::string path = "fuzz-failures/" + target + "-" + std::to_string(run) + ".bin";
  ember::fuzz::write_file(path, bytes);
  std::fprintf(stderr, "  input saved to %s (replay: ember_fuzz %s --input %s)\n", path.c_str(),
               target.c_str(), path.c_str());
}

struct Options {
  std::string target;
  int64_t runs = 1000;
  uint64_t seed = 1;
  size_t max_alloc_mb = 256;
  double timeout_s = 20;
  std::string input;
};

int usage(const char* why) {
  std::fprintf(stderr,
               "ember_fuzz: %s\nusage: ember_fuzz TARGET [--runs N] [--seed S] [--max-alloc-mb M]"
               " [--timeout-s T] [--input FILE] | --list\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--list") {
        for (const Target& t : ember::fuzz::targets()) std::printf("%s\n", t.name);
        return 0;
      } else if (a == "--runs") {
        o.runs = std::stoll(value());
      } else if (a == "--seed") {
        o.seed = std::stoull(value());
      } else if (a == "--max-alloc-mb") {
        o.max_alloc_mb = std::stoull(value());
      } else if (a == "--timeout-s") {
        o.timeout_s = std::stod(value());
      } else if (a == "--input") {
        o.input = value();
      } else if (!a.empty() && a[0] != '-' && o.target.empty()) {
        o.target = a;
      } else {
        return usage(("unknown argument " + a).c_str());
      }
    } catch (const std::exception& e) {
      return usage(e.what());
    }
  }
  if (o.target.empty()) return usage("no target");
  const Target* target = nullptr;
  for (const Target& t : ember::fuzz::targets())
    if (o.target == t.name) target = &t;
  if (!target) return usage(("unknown target " + o.target + " (--list)").c_str());
  if (o.runs < 1 && o.input.empty()) return usage("--runs must be at least 1");

  // Small images only: the budget then catches a size the reader did not check.
  ember::data::set_max_image_pixels(int64_t(1) << 20);
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("ember_fuzz_" + o.target + "_" + std::to_string(::getpid())))
                              .string();
  std::filesystem::create_directories(dir);
  const std::vector<std::string> seeds = target->seeds(dir);
  const size_t budget = o.max_alloc_mb << 20;  // only while a reader runs
  g_current_target = o.target;

  std::thread watchdog([&] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const int64_t t0 = g_started_ms.load();
      if (t0 == -2) return;
      if (t0 >= 0 && double(now_ms() - t0) > o.timeout_s * 1000) {
        std::fprintf(stderr, "FAIL %s run %lld: still running after %.0f s (a hang)\n",
                     o.target.c_str(), (long long)g_current_run, o.timeout_s);
        std::_Exit(1);
      }
    }
  });

  int64_t rejected = 0, accepted = 0, failures = 0, slowest_ms = 0;
  auto one = [&](int64_t run, const std::string& bytes) {
    g_current_run = run;
    g_over = 0;
    const int64_t t0 = now_ms();
    g_started_ms = t0;
    std::string failure;
    g_max_alloc = budget;
    try {
      target->run(bytes, dir);
      ++accepted;
    } catch (const ember::Error&) {
      ++rejected;
    } catch (const std::exception& e) {
      g_max_alloc = kUnlimited;
      failure = std::string("escaped a non-ember exception: ") + e.what();
    } catch (...) {
      failure = "escaped an exception of unknown type";
    }
    g_max_alloc = kUnlimited;
    g_started_ms = -1;
    slowest_ms = std::max(slowest_ms, now_ms() - t0);
    if (g_over)
      failure = "allocated " + std::to_string(g_over.load()) + " bytes at once (budget " +
                std::to_string(o.max_alloc_mb) + " MiB)";
    if (!failure.empty()) {
      ++failures;
      std::fprintf(stderr, "FAIL %s run %lld (%zu bytes): %s\n", o.target.c_str(), (long long)run,
                   bytes.size(), failure.c_str());
      if (o.input.empty()) save_failure(o.target, run, bytes);
    }
  };

  int64_t runs = 0;
  if (!o.input.empty()) {
    one(0, ember::fuzz::read_file(o.input));
    runs = 1;
  } else {
    // Every seed as it is first (a reader must accept its own writer's files), then mutants.
    for (size_t i = 0; i < seeds.size(); ++i) {
      const int64_t before = accepted;
      one(-1 - int64_t(i), seeds[i]);
      if (accepted == before) {
        std::fprintf(stderr, "FAIL %s: seed %zu (written by Ember) is not accepted\n",
                     o.target.c_str(), i);
        ++failures;
      }
    }
    for (int64_t run = 0; run < o.runs; ++run) {
      Mutator m{std::mt19937_64(o.seed * 0x9E3779B97F4A7C15ull + uint64_t(run)), seeds,
                target->text};
      one(run, m.next());
    }
    runs = o.runs + int64_t(seeds.size());
  }
  g_started_ms = -2;
  watchdog.join();
  std::filesystem::remove_all(dir);
  std::printf(
      "ember_fuzz %s: %lld inputs (%zu seeds + %lld mutants, seed %llu): %lld rejected with "
      "ember::Error, %lld accepted, %lld failures; slowest input %lld ms; allocation budget %zu "
      "MiB\n",
      o.target.c_str(), (long long)runs, o.input.empty() ? seeds.size() : size_t(0),
      (long long)(o.input.empty() ? o.runs : 1), (unsigned long long)o.seed, (long long)rejected,
      (long long)accepted, (long long)failures, (long long)slowest_ms, o.max_alloc_mb);
  return failures ? 1 : 0;
}
