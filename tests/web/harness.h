// The browser tests' cases (tests/web): a case runs in two steps around the page's
// `await Module.emberWebGPU.settle()` (the browser cannot wait for the GPU inside a call):
// begin() computes and queues host copies (webgpu::request_host_copy), and returns finish(),
// which checks what landed. A step fails by throwing (ember::Error or std::runtime_error); a
// finish returns a note for the report line.
#pragma once
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace webtest {

/// settle_error: the message settle() rejected with ("" when it resolved).
using Finish = std::function<std::string(const std::string& settle_error)>;
struct Case {
  std::string name;
  std::function<Finish()> begin;
};

std::vector<Case> runtime_cases();
std::vector<Case> optable_cases();

/// Throws std::runtime_error(what) unless ok.
inline void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}
/// Throws unless fn throws ember::Error containing every one of `parts`; returns its message.
std::string expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts);

}  // namespace webtest
