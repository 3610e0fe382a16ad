#pragma once
// The emulator's cuBLAS (v2 API): see cublas_api.h.
#include "cublas_api.h"
