// A generated matmul's epilogue (KernelBackend::execute_anchored): the element-wise graph the
// stream joined to an ir::Matmul, evaluated by the matmul kernel (matmul.cpp) on each output as
// it is stored, so the product never goes through memory. Output (bt, r, c) of the [B, M, N]
// product is element (bt * M + r) * N + c of the graph: the inputs that read the product get the
// accumulator rounded to the matmul's dtype (what the eager matmul would have stored), the
// others are loaded at that element through their strides seen as [B, M, N] (broadcast dims
// keep stride 0), the nodes are evaluated as the fused graph kernel does (graph_nodes.h), and
// the graph's outputs are stored the same way. Internal to src/codegen.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/family.h"
#include "ir/graph.h"

namespace ember::codegen {

struct MatmulEpilogue {
  /// A buffer the epilogue binds: an input that is not the product, or an output.
  struct Operand {
    Tensor t;
    int64_t offset = 0;
    int64_t strides[3] = {0, 0, 0};  // t's elements seen as the product's [B, M, N]
    bool output = false;
  };
  const ir::FusedGraph* g = nullptr;
  std::vector<bool> product;      // per input: it reads the product (the anchor's output)
  std::vector<int> operand_of;    // per input: its operand, -1 for the product
  std::vector<Operand> operands;  // inputs (in input order), then the outputs
  // Filled by epilogue_params: each operand's first params word (offset, then 3 strides) and
  // the nodes' params (graph_params).
  std::vector<size_t> at;
  std::vector<uint32_t> word;
};

/// The epilogue of `op` in `g` (whose inputs[anchor_input] reads op's dst), or false when it
/// cannot be one here: a dtype other than f32/f16/bf16/f64, an operand that cannot be seen as
/// [B, M, N] or reaches past 31-bit offsets, or more buffers than the device binds (the matmul's
/// a, b and a split-K carrier besides the epilogue's operands).
bool plan_matmul_epilogue(const ir::Matmul& op, const ir::FusedGraph& g, int32_t anchor_input,
                          const Caps& caps, MatmulEpilogue& e);
/// The kernel key part: the graph's structure and dtypes and which inputs read the product.
std::string epilogue_key(const MatmulEpilogue& e);
/// Appends the operands' views and the nodes' params to `p` (after the matmul's words).
void epilogue_params(ParamBuilder& p, MatmulEpilogue& e, const Caps& caps);
/// Declares the operands' buffers in `k` (after the matmul's); returns them in operand order.
std::vector<kir::Buf> epilogue_buffers(kir::Kernel& k, const MatmulEpilogue& e);
/// The bindings of those buffers.
std::vector<Binding> epilogue_bindings(const MatmulEpilogue& e);
/// Evaluates the graph at output (bt, r, c) (u32) whose product is `value` (the matmul dtype's
/// compute type, already rounded to the dtype) and stores the graph's outputs.
void epilogue_store(kir::Kernel& k, const MatmulEpilogue& e, const std::vector<kir::Buf>& bufs,
                    kir::Expr bt, kir::Expr r, kir::Expr c, kir::Expr value, const Caps& caps);

}  // namespace ember::codegen
