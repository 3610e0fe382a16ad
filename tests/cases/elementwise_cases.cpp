#include "tests/cases/elementwise_cases.h"

#include <algorithm>
#include <cmath>

#include "engine/ops.h"

namespace sonata::testing {

const std::vector<BinaryCase>& binary_cases() {
  static const std::vector<BinaryCase> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); },
       [](double a, double b) { return a + b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); },
       [](double a, double b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); },
       [](double a, double b) { return a * b; }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); },
       [](double a, double b) { return a / b; }, 0.5, 1.5},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
       [](double a, double b) { return std::max(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
       [](double a, double b) { return std::min(a, b); }},
  };
  return cases;
}

const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", [](const Tensor& x) { return neg(x); }, [](double x) { return -x; }, -1, 1},
      {"exp", [](const Tensor& x) { return exp(x); }, [](double x) { return std::exp(x); }, -1, 1},
      {"log", [](const Tensor& x) { return log(x); }, [](double x) { return std::log(x); }, 0.5, 2},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); }, 0.5,
       2},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); },
       [](double x) { return 1.0 / std::sqrt(x); }, 0.5, 2},
      {"abs", [](const Tensor& x) { return abs(x); }, [](double x) { return std::fabs(x); }, -1, 1},
      {"pow 1.5", [](const Tensor& x) { return pow(x, 1.5); },
       [](double x) { return std::pow(x, 1.5); }, 0.5, 2},
      {"pow -0.5", [](const Tensor& x) { return pow(x, -0.5); },
       [](double x) { return std::pow(x, -0.5); }, 0.5, 2},
      {"pow 0.3", [](const Tensor& x) { return pow(x, 0.3); },
       [](double x) { return std::pow(x, 0.3); }, 0.5, 2},
      {"pow 2", [](const Tensor& x) { return pow(x, 2.0); }, [](double x) { return x * x; }, -1, 1},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0.0; },
       -1, 1},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); },
       [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -3, 3},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, -2,
       2},
      {"hardtanh", [](const Tensor& x) { return hardtanh(x); },
       [](double x) { return std::clamp(x, -1.0, 1.0); }, -2, 2},
      {"hardtanh 0 6", [](const Tensor& x) { return hardtanh(x, 0.0, 6.0); },
       [](double x) { return std::clamp(x, 0.0, 6.0); }, -2, 8},
      {"clamp", [](const Tensor& x) { return clamp(x, -0.4, 0.7); },
       [](double x) { return std::clamp(x, -0.4, 0.7); }, -1, 1},
      {"add scalar", [](const Tensor& x) { return add(x, 2.5); }, [](double x) { return x + 2.5; },
       -1, 1},
      {"mul scalar", [](const Tensor& x) { return mul(x, -3.0); },
       [](double x) { return -3.0 * x; }, -1, 1},
      {"operator minus scalar", [](const Tensor& x) { return x - 2.0; },
       [](double x) { return x - 2.0; }, -1, 1},
      {"operator scalar times", [](const Tensor& x) { return 2.0 * x; },
       [](double x) { return 2.0 * x; }, -1, 1},
      {"operator divide scalar", [](const Tensor& x) { return x / 4.0; },
       [](double x) { return x / 4.0; }, -1, 1},
      {"operator negate", [](const Tensor& x) { return -x; }, [](double x) { return -x; }, -1, 1},
  };
  return cases;
}

const std::vector<ComparisonCase>& comparison_cases() {
  static const std::vector<ComparisonCase> cases = {
      {"eq", eq}, {"ne", ne}, {"lt", lt}, {"le", le}, {"gt", gt}, {"ge", ge},
  };
  return cases;
}

}  // namespace sonata::testing
