// ir::FusedGraph's cache key and its printed form (src/ir/graph.h).
#include <string>

#include "ir/graph.h"
#include "ir/op_traits.h"

namespace ember {

namespace ir {

std::string FusedGraph::key() const {
  std::string k = "g" + std::to_string(inputs.size()) + ":";
  for (const Node& n : nodes) {
    k += char('a' + int(n.kind));
    k += dtype_name(n.dtype);
    switch (n.kind) {
      case Kind::load:
        k += std::to_string(n.input);
        break;
      case Kind::constant:
        break;
      case Kind::unary:
        k += name(n.unary);
        break;
      case Kind::binary:
        k += name(n.binary);
        break;
      default:
        break;
    }
    for (int32_t o : {n.a, n.b, n.c})
      if (o >= 0) k += "," + std::to_string(o);
    k += ";";
  }
  k += "|";
  for (const Output& o : outputs) k += std::to_string(o.node) + ";";
  for (const Reduction& r : reductions) {
    k += "|r" + std::to_string(int(r.op)) + "." + std::to_string(r.node) + "." +
         dtype_name(r.dst.dtype()) + ".d";
    for (int64_t d : r.dims) k += std::to_string(d) + ",";
  }
  for (const FusedGraph& a : after) k += "|after{" + a.key() + "}";
  return k;
}

std::string FusedGraph::describe() const {
  std::string s;
  auto shape_str = [](const Shape& sh) {
    std::string r = "[";
    for (size_t i = 0; i < sh.size(); ++i) r += (i ? ", " : "") + std::to_string(sh[i]);
    return r + "]";
  };
  s += "  shape " + shape_str(shape) + ", " + std::to_string(inputs.size()) + " inputs, " +
       std::to_string(outputs.size()) + " outputs\n";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    s += "  %" + std::to_string(i) + " " + dtype_name(n.dtype) + " = ";
    auto arg = [](int32_t o) { return "%" + std::to_string(o); };
    switch (n.kind) {
      case Kind::load:
        s += "load in" + std::to_string(n.input);
        break;
      case Kind::constant:
        s += "constant " + std::to_string(n.value.to_double());
        break;
      case Kind::unary:
        s += std::string(name(n.unary)) + "(" + arg(n.a) + ")";
        break;
      case Kind::binary:
        s += std::string(name(n.binary)) + "(" + arg(n.a) + ", " + arg(n.b) + ")";
        break;
      case Kind::where:
        s += "where(" + arg(n.a) + ", " + arg(n.b) + ", " + arg(n.c) + ")";
        break;
      case Kind::cast:
        s += "cast(" + arg(n.a) + ")";
        break;
    }
    s += "\n";
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    s += "  out" + std::to_string(i) + " = %" + std::to_string(outputs[i].node) + "\n";
  static const char* const kReduceNames[] = {"sum", "prod", "max", "min", "any", "all"};
  for (size_t i = 0; i < reductions.size(); ++i) {
    const Reduction& r = reductions[i];
    s += "  red" + std::to_string(i) + " = " + kReduceNames[int(r.op)] + "(%" +
         std::to_string(r.node) + ", dims";
    for (int64_t d : r.dims) s += " " + std::to_string(d);
    s += ") -> " + std::string(dtype_name(r.dst.dtype())) + " " + shape_str(r.dst.shape()) + "\n";
  }
  for (const FusedGraph& a : after) s += "  then, on the reductions' results:\n" + a.describe();
  return s;
}

}  // namespace ir

}  // namespace ember
