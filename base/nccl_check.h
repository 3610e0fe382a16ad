#pragma once
#include <nccl.h>

#include "base/error.h"

#define NCCL_CHECK(call) SONATA_LIB_CHECK("NCCL", call, ncclSuccess, ncclGetErrorString)
