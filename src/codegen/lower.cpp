#include "codegen/lower.h"

namespace ember::codegen {

Lowering lower(const ir::Op& op, Dialect d, const Caps& caps) {
  return std::visit(
      [&](const auto& o) -> Lowering {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, ir::Copy>)
          return lower_copy(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Fill>)
          return lower_fill(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Unary>)
          return lower_unary(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Binary>)
          return lower_binary(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Where>)
          return lower_where(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Random>)
          return lower_random(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Reduce>)
          return lower_reduce(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Scan>)
          return lower_scan(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Sort>)
          return lower_sort(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Nonzero>)
          return lower_nonzero(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Gather>)
          return lower_gather(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Scatter>)
          return lower_scatter(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::IndexSelect>)
          return lower_index_select(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::IndexAdd>)
          return lower_index_add(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Matmul>)
          return lower_matmul(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Im2col>)
          return lower_im2col(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::Col2im>)
          return lower_col2im(o, d, caps);
        else if constexpr (std::is_same_v<T, ir::AdaptivePool>)
          return lower_adaptive_pool(o, d, caps);
        else
          return lower_interpolate(o, d, caps);
      },
      op);
}

}  // namespace ember::codegen
