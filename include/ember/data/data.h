// ember::data: datasets, transforms, the DataLoader, file readers and the MNIST-style datasets.
#pragma once
#include "ember/data/dataloader.h"
#include "ember/data/dataset.h"
#include "ember/data/io.h"
#include "ember/data/mnist.h"
#include "ember/data/transforms.h"
