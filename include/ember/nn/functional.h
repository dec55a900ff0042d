// ember::nn::functional: the functional forms of the neural-network ops (as torch.nn.functional).
#pragma once
#include "ember/nn/functional/activation.h"
#include "ember/nn/functional/attention.h"
#include "ember/nn/functional/conv.h"
#include "ember/nn/functional/interpolate.h"
#include "ember/nn/functional/loss.h"
#include "ember/nn/functional/norm.h"
#include "ember/nn/functional/pool.h"
