// Placeholder: being written.
#pragma once
#include "ember/tensor.h"
