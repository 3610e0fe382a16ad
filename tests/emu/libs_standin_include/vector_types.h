#pragma once
// STAND-IN, for the emu-libs tests only until emu/include/vector_types.h (emu-exec) lands.
struct __attribute__((aligned(8))) float2 {
  float x, y;
};
struct __attribute__((aligned(16))) double2 {
  double x, y;
};
