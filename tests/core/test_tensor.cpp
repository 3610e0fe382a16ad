#include <catch2/catch.hpp>

#include <sstream>

#include "base/error.h"
#include "engine/allocator.h"
#include "engine/ops.h"

using namespace sonata;

TEST_CASE("creation fills shapes, dtypes and values", "[core][tensor]") {
  const Tensor z = zeros({2, 3});
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.strides() == Shape{3, 1});
  CHECK(z.dtype() == DType::f32);
  CHECK(z.device() == Device::cpu());
  CHECK(z.to_vector<float>() == std::vector<float>(6, 0.0f));
  CHECK(ones({4}, TensorOptions{}.with(DType::i64)).to_vector<int64_t>() ==
        std::vector<int64_t>{1, 1, 1, 1});
  CHECK(full({2}, 2.5, TensorOptions{}.with(DType::f64)).to_vector<double>() ==
        std::vector<double>{2.5, 2.5});
  CHECK(arange(0, 5).to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4});
  CHECK(arange(1, 2, 0.25, TensorOptions{}.with(DType::f64)).to_vector<double>() ==
        std::vector<double>{1, 1.25, 1.5, 1.75});
  const Tensor scalar = full({}, 3.0);
  CHECK(scalar.dim() == 0);
  CHECK(scalar.numel() == 1);
  CHECK(scalar.item() == 3.0);
  const Tensor empty_rows = zeros({0, 4});
  CHECK(empty_rows.numel() == 0);
  CHECK(sum(empty_rows).item() == 0.0);
  CHECK(reinterpret_cast<uintptr_t>(zeros({3}).data_ptr()) % kCpuAlignment == 0);
}

TEST_CASE("views share storage and follow PyTorch's stride rules", "[core][tensor]") {
  Tensor base = arange(0, 24).reshape({2, 3, 4});
  Tensor t = base.transpose(0, 2);  // [4, 3, 2]
  CHECK(t.shape() == Shape{4, 3, 2});
  CHECK(t.strides() == Shape{1, 4, 12});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.storage() == base.storage());

  Tensor row = base.select(1, 2);  // [2, 4]: base[:, 2, :]
  CHECK(row.to_vector<float>() == std::vector<float>{8, 9, 10, 11, 20, 21, 22, 23});
  Tensor every_other = base.slice(2, 0, 4, 2);  // [2, 3, 2]
  CHECK(every_other.to_vector<float>() ==
        std::vector<float>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22});
  row.fill_(-1);  // writes through to base
  CHECK(base.to_vector<float>()[8] == -1);
  CHECK(base.to_vector<float>()[23] == -1);

  CHECK(base.unsqueeze(0).shape() == Shape{1, 2, 3, 4});
  CHECK(base.unsqueeze(-1).shape() == Shape{2, 3, 4, 1});
  CHECK(base.unsqueeze(0).squeeze(0).shape() == Shape{2, 3, 4});
  CHECK(base.squeeze(1).shape() == Shape{2, 3, 4});  // size 3: unchanged
  CHECK(base.view({6, -1}).shape() == Shape{6, 4});
  CHECK(base.flatten(1).shape() == Shape{2, 12});

  Tensor column = arange(0, 3).reshape({3, 1});
  Tensor wide = column.expand({2, 3, 5});
  CHECK(wide.strides() == Shape{0, 1, 0});
  CHECK(wide.contiguous().to_vector<float>()[5] == 1);

  // A transposed tensor cannot be viewed flat: view refuses, reshape copies.
  CHECK_THROWS_WITH(t.view({24}), Catch::Contains("reshape"));
  Tensor flat = t.reshape({24});
  CHECK(flat.is_contiguous());
  CHECK(flat.storage() != base.storage());
  CHECK(flat.to_vector<float>()[1] == 12);  // t[0,0,1] = base[1,0,0]
}

TEST_CASE("permute and contiguous give row-major copies", "[core][tensor]") {
  Tensor x = arange(0, 6).reshape({2, 3});
  Tensor p = x.permute({1, 0}).contiguous();
  CHECK(p.to_vector<float>() == std::vector<float>{0, 3, 1, 4, 2, 5});
  CHECK_THROWS_AS(x.permute({0, 0}), Error);
  CHECK_THROWS_AS(x.permute({0}), Error);
}

TEST_CASE("conversion to every dtype and back to f64", "[core][tensor]") {
  const Tensor source =
      from_vector(std::vector<double>{-2.75, 0.0, 1.5, 3.0}, {4}, TensorOptions{}.with(DType::f64));
  for (DType dtype : kAllDTypes) {
    const std::vector<double> back = source.to(dtype).to(DType::f64).to_vector<double>();
    INFO(dtype_name(dtype));
    switch (dtype) {
      case DType::f16:
      case DType::bf16:
      case DType::f32:
      case DType::f64:
        CHECK(back == std::vector<double>{-2.75, 0.0, 1.5, 3.0});
        break;
      case DType::i32:
      case DType::i64:
        CHECK(back == std::vector<double>{-2, 0, 1, 3});
        break;  // truncation
      case DType::u8:
        CHECK(back[1] == 0);
        CHECK(back[3] == 3);
        break;
      case DType::boolean:
        CHECK(back == std::vector<double>{1, 0, 1, 1});
        break;
    }
  }
  CHECK(from_vector(std::vector<double>{0.1}, {1}, TensorOptions{}.with(DType::f64))
            .to(DType::bf16)
            .to(DType::f64)
            .item() == 0.10009765625);
}

TEST_CASE("item, printing and the errors users see", "[core][tensor]") {
  const Tensor x = arange(0, 4).reshape({2, 2});
  CHECK_THROWS_WITH(x.item(), Catch::Contains("4 elements"));
  std::ostringstream text;
  text << x;
  CHECK(text.str() == "Tensor([[0, 1],\n        [2, 3]], shape=[2, 2], dtype=f32, device=cpu)");
  const std::string long_row = arange(0, 100).to_string();
  CHECK_THAT(long_row, Catch::Contains("0, 1, 2, ..., 97, 98, 99"));
  CHECK_THROWS_WITH(Device::parse("gpu"), Catch::Contains("'gpu'"));
  CHECK(Device::parse("cuda:3") == Device::cuda(3));
  CHECK_THROWS_WITH(parse_dtype("float8"), Catch::Contains("'float8'"));
  CHECK_THROWS_WITH(add(zeros({2, 3}), zeros({4})),
                    Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
  CHECK_THROWS_WITH(x.view({3, -1}), Catch::Contains("invalid for 4 elements"));
  CHECK_THROWS_WITH(x.size(2), Catch::Contains("dim 2 is out of range"));
}

TEST_CASE("without the CUDA backend or a device, CUDA requests fail clearly", "[core][tensor]") {
  if (cuda_available()) return;  // the CUDA tests cover this machine
  CHECK_THROWS_WITH(zeros({2}).to(Device::cuda()), Catch::Contains("cuda"));
  CHECK_FALSE(cuda_unavailable_reason().empty());
  CHECK(cuda_memory_stats(0).allocated_bytes == 0);
}

TEST_CASE("from_host and from_blob", "[core][tensor]") {
  const float values[] = {1, 2, 3, 4, 5, 6};
  Tensor copied = from_host(values, {2, 3}, DType::f32, TensorOptions{}.with(DType::f64));
  CHECK(copied.dtype() == DType::f64);
  CHECK(copied.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});
  float buffer[] = {1, 2};
  Tensor wrapped = from_blob(buffer, {2}, DType::f32);
  wrapped.fill_(7);
  CHECK(buffer[0] == 7);
  CHECK(buffer[1] == 7);
}

TEST_CASE("in-place ops broadcast and cast", "[core][tensor]") {
  Tensor x = zeros({2, 3}, TensorOptions{}.with(DType::f64));
  x.copy_(arange(0, 3));
  CHECK(x.to_vector<double>() == std::vector<double>{0, 1, 2, 0, 1, 2});
  x.add_(ones({3}), 2.0);
  CHECK(x.to_vector<double>() == std::vector<double>{2, 3, 4, 2, 3, 4});
  x.mul_(0.5);
  CHECK(x.to_vector<double>() == std::vector<double>{1, 1.5, 2, 1, 1.5, 2});
  Tensor t = x.t();  // non-contiguous fill
  t.slice(0, 1, 2).fill_(9);
  CHECK(x.to_vector<double>() == std::vector<double>{1, 9, 2, 1, 9, 2});
}
