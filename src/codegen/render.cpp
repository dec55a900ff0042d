// PLACEHOLDER: the GLSL renderer is being written now.
#include "codegen/kernel.h"
#include "ember/error.h"

namespace ember::codegen {

std::shared_ptr<const Kernel> render(const KernelDef& def, Dialect, const Caps&) {
  EMBER_FAIL("codegen", "renderer not written yet (", def.name, ")");
}

}  // namespace ember::codegen
