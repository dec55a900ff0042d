// The one header a user includes: tensors, devices, every op and nn::functional.
#pragma once
#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/nn/functional.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/indexing.h"
#include "ember/ops/layout.h"
#include "ember/ops/linalg.h"
#include "ember/ops/reduce.h"
#include "ember/shape.h"
#include "ember/tensor.h"
