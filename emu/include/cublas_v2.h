#pragma once
#if defined(CUBLAS_V2_H_) && !defined(SONATA_EMU_CUBLAS_V2_H)
#error \
    "the CUDA toolkit's cublas_v2.h was included before the emulator's (emu/include): put emu/include first"
#endif
// The toolkit's include guard, so that a toolkit header included later finds this one.
#define CUBLAS_V2_H_
#define SONATA_EMU_CUBLAS_V2_H
// The emulator's cuBLAS (v2 API): see cublas_api.h.
#include "cublas_api.h"
