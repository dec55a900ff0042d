// The core in one header: tensors, devices, autograd, every op, nn and optim. Data loading,
// model files and training have their own: ember/data/data.h, ember/record/*.h, ember/train/*.h.
#pragma once
#include "ember/autograd.h"
#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/nn/functional.h"
#include "ember/nn/init.h"
#include "ember/nn/nn.h"
#include "ember/nn/utils.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/indexing.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"
#include "ember/optim/optim.h"
#include "ember/shape.h"
#include "ember/tensor.h"
