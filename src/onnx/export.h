// The built-in ONNX exporters of Ember's nn modules (export_modules.cpp), for save() (export.cpp).
#pragma once
#include <map>
#include <string>

#include "ember/onnx.h"

namespace ember::onnx::detail {

/// Adds an exporter per built-in module type name ("Conv2d", "ReLU", ...).
void register_builtin_exporters(std::map<std::string, Exporter>& r);
/// A Sequential (or a subclass keeping its forward): its children in order.
std::string export_sequential(nn::Module& m, ExportGraph& g, const std::string& input);

}  // namespace ember::onnx::detail
