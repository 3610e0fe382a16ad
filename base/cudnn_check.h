#pragma once
#include <cudnn.h>

#include "base/error.h"

#define CUDNN_CHECK(call) SONATA_LIB_CHECK("cuDNN", call, CUDNN_STATUS_SUCCESS, cudnnGetErrorString)
