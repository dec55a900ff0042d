// Everything in ember::optim: optimizers and learning-rate schedulers.
#pragma once
#include "ember/optim/adagrad.h"
#include "ember/optim/adam.h"
#include "ember/optim/grad_scaler.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
#include "ember/optim/rmsprop.h"
#include "ember/optim/sgd.h"
