#pragma once
// The toolkit's include guard, so that a toolkit header included later finds this one.
#define __VECTOR_TYPES_H__
// Minimal vector types for the emulated runtime's headers (placeholder written by
// emu-runtime; emu-exec owns the final version of this file).
#ifdef __cplusplus
struct uint3 {
  unsigned int x, y, z;
};

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};
#endif
