#include "tests/cases/view_cases.h"

namespace sonata::testing {

const std::vector<ViewCase>& view_cases() {
  static const std::vector<ViewCase> cases = {
      {"view",
       {2, 3, 4},
       [](const Tensor& x) {
         return x.view({6, 4});
       }},
      {"view with -1",
       {2, 3, 4},
       [](const Tensor& x) {
         return x.view({-1, 2});
       }},
      {"reshape of a contiguous tensor",
       {2, 3, 4},
       [](const Tensor& x) {
         return x.reshape({4, 6});
       }},
      {"reshape of a transposed tensor copies",
       {3, 4},
       [](const Tensor& x) { return x.t().reshape({12}); }},
      {"permute",
       {2, 3, 4},
       [](const Tensor& x) {
         return x.permute({2, 0, 1});
       }},
      {"transpose", {2, 3, 4}, [](const Tensor& x) { return x.transpose(0, 2); }},
      {"t", {3, 4}, [](const Tensor& x) { return x.t(); }},
      {"slice", {5, 4}, [](const Tensor& x) { return x.slice(0, 1, 4); }},
      {"slice with step 2", {5, 4}, [](const Tensor& x) { return x.slice(0, 0, 5, 2); }},
      {"slice with negative bounds", {5, 4}, [](const Tensor& x) { return x.slice(1, -3, -1); }},
      {"slice of a slice",
       {6, 4},
       [](const Tensor& x) { return x.slice(0, 1, 6, 2).slice(1, 1, 4, 2); }},
      {"select", {3, 4}, [](const Tensor& x) { return x.select(1, 2); }},
      {"select negative", {3, 4}, [](const Tensor& x) { return x.select(0, -1); }},
      {"squeeze", {3, 1, 4}, [](const Tensor& x) { return x.squeeze(1); }},
      {"unsqueeze", {3, 4}, [](const Tensor& x) { return x.unsqueeze(1); }},
      {"unsqueeze at the end", {3, 4}, [](const Tensor& x) { return x.unsqueeze(-1); }},
      {"expand",
       {3, 1},
       [](const Tensor& x) {
         return x.expand({2, 3, 4});
       }},
      {"expand keeping a size",
       {1, 4},
       [](const Tensor& x) {
         return x.expand({3, -1});
       }},
      {"flatten", {2, 3, 4}, [](const Tensor& x) { return x.flatten(); }},
      {"flatten middle dims", {2, 3, 4}, [](const Tensor& x) { return x.flatten(1, 2); }},
      {"flatten of a transposed tensor",
       {2, 3, 4},
       [](const Tensor& x) { return x.transpose(0, 1).flatten(0, 1); }},
      {"contiguous of a transposed tensor",
       {3, 4},
       [](const Tensor& x) { return x.t().contiguous(); }},
      {"clone", {3, 4}, [](const Tensor& x) { return x.clone(); }},
      {"clone of a strided slice",
       {6, 4},
       [](const Tensor& x) { return x.slice(0, 0, 6, 2).clone(); }},
      {"view after permute and contiguous",
       {2, 3, 4},
       [](const Tensor& x) {
         return x.permute({1, 2, 0}).contiguous().view({3, 8});
       }},
      {"large permute",
       {33, 65, 17},
       [](const Tensor& x) {
         return x.permute({2, 0, 1});
       },
       true},
      {"large expand",
       {1, 129},
       [](const Tensor& x) {
         return x.expand({257, 129});
       },
       true},
  };
  return cases;
}

}  // namespace sonata::testing
