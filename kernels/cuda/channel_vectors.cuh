#pragma once
// Channels-last ([pixels or rows, channels]) kernels' common plan: each thread owns a vector
// of V neighbouring channels (a 16-byte pack when the channels fill whole packs and every
// pointer is aligned to one, else 8 bytes, else one element) and walks pixels. A block is
// (tx channel vectors) x (ty pixels) of threads, tx = min(vectors per pixel, 32), so a warp
// reads whole packs of consecutive channels, several pixels at once when a pixel is short (64
// f16 channels are 8 packs: a warp reads 4 pixels, 512 contiguous bytes). Grids loop over
// channel tiles (blockIdx.y) and pixel blocks (blockIdx.x). Used by batch_norm_columns.cu and
// pool_channels_last.cu.
#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {

inline constexpr int kChannelVectorThreads = 256;
// Enough blocks of 256 threads for a few waves on a Hopper-class GPU (132 SMs x 8 blocks).
inline constexpr int64_t kChannelVectorBlocks = 4096;

// tx channel vectors x ty pixels of threads; `tiles` tiles of tx vectors cover a pixel.
struct ChannelVectorBlocks {
  unsigned tx, ty;
  int64_t tiles;

  dim3 block() const { return dim3(tx, ty); }
  // blockIdx.y: the channel tiles, at most the grid's y limit (kernels loop over the rest).
  unsigned tile_grid() const { return unsigned(std::min<int64_t>(tiles, 65535)); }
  // A grid-stride pass over `pixels`: every tile, and pixel blocks up to about
  // kChannelVectorBlocks in all (each thread then walks several pixels).
  dim3 pass_grid(int64_t pixels) const {
    const int64_t pixel_blocks = (pixels + ty - 1) / ty;
    const int64_t room = std::max<int64_t>(1, kChannelVectorBlocks / tiles);
    return dim3(unsigned(std::clamp<int64_t>(std::min(pixel_blocks, room), 1, kMaxBlocks)),
                tile_grid());
  }
};

inline ChannelVectorBlocks channel_vector_blocks(int64_t vectors) {
  const unsigned tx = unsigned(std::clamp<int64_t>(vectors, 1, kWarpSize));
  return {tx, unsigned(kChannelVectorThreads) / tx, (vectors + tx - 1) / tx};
}

// Runs body.template operator()<V>() with V channels per thread: a 16-byte pack when the
// channels fill whole packs and every pointer is aligned to one, else 8 bytes, else one.
template <typename T, typename F>
void with_channel_width(int64_t channels, std::initializer_list<const void*> pointers, F&& body) {
  auto fits = [&](int width) {
    if (channels % width != 0) return false;
    for (const void* p : pointers)
      if (p && !is_aligned(p, sizeof(T) * size_t(width))) return false;
    return true;
  };
  constexpr int kWide = kPackWidth<T>, kNarrow = kWide / 2;
  if (fits(kWide)) return body.template operator()<kWide>();
  if constexpr (kNarrow > 1)
    if (fits(kNarrow)) return body.template operator()<kNarrow>();
  body.template operator()<1>();
}

}  // namespace sonata::kernels::cuda
