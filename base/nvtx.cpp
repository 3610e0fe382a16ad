#include "base/nvtx.h"

#if SONATA_WITH_CUDA
#include <nvtx3/nvToolsExt.h>
#endif

namespace sonata {

#if SONATA_WITH_CUDA
NvtxRange::NvtxRange(const char* name) {
  nvtxRangePushA(name);
}
NvtxRange::~NvtxRange() {
  nvtxRangePop();
}
#else
NvtxRange::NvtxRange(const char*) {}
NvtxRange::~NvtxRange() {}
#endif

}  // namespace sonata
