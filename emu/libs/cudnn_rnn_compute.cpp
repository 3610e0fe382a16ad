// The emulated cuDNN RNN passes as naive loops from cuDNN's documented LSTM / GRU equations
// (cudnn_rnn_internal.h), one sample at a time, in double; products see their operands as
// the tensor cores would (TF32 for fp32 unless FMA math). Results are rounded once to the
// data type when stored. Forward keeps every step's gates and states in the reserve space;
// backward data adds the gates' gradients there, which backward weights reads.
#include <cmath>
#include <limits>
#include <vector>

#include "emu/libs/cudnn_rnn_internal.h"

namespace sonata::emu::dnn {
namespace {

double sigmoid(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}

// Where the pieces of one reserve record sit.
struct Record {
  int64_t gates_at, c_at, h_at, hn_at, dgx_at, dgh_at, size;
  explicit Record(const RnnGeometry& g) {
    const int64_t gh = int64_t(g.gates) * g.hidden;
    gates_at = 0, c_at = gh, h_at = c_at + g.hidden, hn_at = h_at + g.hidden;
    dgx_at = hn_at + g.hidden, dgh_at = dgx_at + gh, size = dgh_at + gh;
  }
};

class RnnPass {
 public:
  explicit RnnPass(const RnnOperands& op) : op_(op), g_(op.g), rec_(op.g) {
    steps_ = op.x.max_seq, batch_ = op.x.batch;
  }

  double* record(int p, int t, int b) const {
    return op_.reserve + ((int64_t(p) * steps_ + t) * batch_ + b) * rec_.size;
  }
  int length(int b) const { return op_.x.lengths[size_t(b)]; }
  // The step before t in the direction's order, or -1 at the direction's first step.
  int previous(int dir, int t, int b) const {
    if (dir == 0) return t - 1;
    return t + 1 < length(b) ? t + 1 : -1;
  }
  double operand(double v) const { return g_.tf32 ? double(round_to_tf32(float(v))) : v; }
  double weight(const void* space, int64_t at) const {
    return operand(load_elem(g_.elem, space, at));
  }
  // A state vector of `states` ([L*D, N, H]) or zeros when null.
  std::vector<double> state(const void* states, int p, int b) const {
    std::vector<double> v(size_t(g_.hidden), 0.0);
    if (states)
      for (int j = 0; j < g_.hidden; ++j)
        v[size_t(j)] = load_elem(g_.elem, states, (int64_t(p) * batch_ + b) * g_.hidden + j);
    return v;
  }
  void store_state(void* states, int p, int b, const double* v) const {
    if (!states) return;
    for (int j = 0; j < g_.hidden; ++j)
      store_elem(g_.elem, states, (int64_t(p) * batch_ + b) * g_.hidden + j, v[j]);
  }
  // The input vector of pseudo-layer p at (t, b): x for the first layer, else the previous
  // layer's outputs of both directions (from their records).
  std::vector<double> layer_input(int p, int t, int b) const {
    const int64_t in = g_.layer_input(p);
    std::vector<double> v(static_cast<size_t>(in));
    if (p < g_.directions) {
      const int64_t at = rnn_data_offset(op_.x, t, b);
      for (int64_t k = 0; k < in; ++k) v[size_t(k)] = load_elem(g_.elem, op_.x_data, at + k);
    } else {
      const int below = (p / g_.directions - 1) * g_.directions;
      for (int d = 0; d < g_.directions; ++d) {
        const double* r = record(below + d, t, b);
        for (int j = 0; j < g_.hidden; ++j) v[size_t(d * g_.hidden + j)] = r[rec_.h_at + j];
      }
    }
    return v;
  }
  // The state the step at t started from: the previous step's h (c), or the initial one.
  std::vector<double> h_prev(int p, int dir, int t, int b) const {
    const int prev = previous(dir, t, b);
    if (prev < 0) return state(op_.hx, p, b);
    const double* r = record(p, prev, b);
    return std::vector<double>(r + rec_.h_at, r + rec_.h_at + g_.hidden);
  }
  std::vector<double> c_prev(int p, int dir, int t, int b) const {
    const int prev = previous(dir, t, b);
    if (prev < 0) return state(op_.cx, p, b);
    const double* r = record(p, prev, b);
    return std::vector<double>(r + rec_.c_at, r + rec_.c_at + g_.hidden);
  }

  void forward() const;
  void backward_data() const;
  void backward_weights() const;

 private:
  void forward_step(int p, int dir, int t, int b) const;
  // Backpropagates one step: dh, dc in (the gradient reaching this step's h and c), out
  // the gradient of the step's previous state; adds W^T dgates to dinput.
  void backward_step(int p, int dir, int t, int b, std::vector<double>& dh, std::vector<double>& dc,
                     std::vector<double>& dinput) const;

  const RnnOperands& op_;
  const RnnGeometry& g_;
  Record rec_;
  int steps_ = 0, batch_ = 0;
};

void RnnPass::forward_step(int p, int dir, int t, int b) const {
  const int H = g_.hidden, G = g_.gates;
  const int64_t in = g_.layer_input(p);
  const std::vector<double> x = layer_input(p, t, b), h = h_prev(p, dir, t, b);
  const std::vector<double> cp = G == 4 ? c_prev(p, dir, t, b) : std::vector<double>();
  double* r = record(p, t, b);
  // Pre-activations, the input and recurrent halves apart (the GRU gates its h' half by r).
  std::vector<double> wx(size_t(G * H), 0.0), rh(size_t(G * H), 0.0);
  for (int gate = 0; gate < G; ++gate)
    for (int j = 0; j < H; ++j) {
      double sx = 0, sh = 0;
      const int64_t wrow = g_.matrix_offset(p, gate) + int64_t(j) * in;
      for (int64_t k = 0; k < in; ++k) sx += weight(op_.weights, wrow + k) * operand(x[size_t(k)]);
      const int64_t rrow = g_.matrix_offset(p, G + gate) + int64_t(j) * H;
      for (int k = 0; k < H; ++k) sh += weight(op_.weights, rrow + k) * operand(h[size_t(k)]);
      if (g_.bias) {
        sx += load_elem(g_.elem, op_.weights, g_.bias_offset(p, gate) + j);
        sh += load_elem(g_.elem, op_.weights, g_.bias_offset(p, G + gate) + j);
      }
      wx[size_t(gate * H + j)] = sx;
      rh[size_t(gate * H + j)] = sh;
    }
  for (int j = 0; j < H; ++j) {
    if (G == 4) {  // i, f, c', o
      const double i = sigmoid(wx[size_t(j)] + rh[size_t(j)]);
      const double f = sigmoid(wx[size_t(H + j)] + rh[size_t(H + j)]);
      const double cc = std::tanh(wx[size_t(2 * H + j)] + rh[size_t(2 * H + j)]);
      const double o = sigmoid(wx[size_t(3 * H + j)] + rh[size_t(3 * H + j)]);
      const double c = f * cp[size_t(j)] + i * cc;
      r[j] = i, r[H + j] = f, r[2 * H + j] = cc, r[3 * H + j] = o;
      r[rec_.c_at + j] = c;
      r[rec_.h_at + j] = o * std::tanh(c);
    } else {  // r, u, h'
      const double rg = sigmoid(wx[size_t(j)] + rh[size_t(j)]);
      const double u = sigmoid(wx[size_t(H + j)] + rh[size_t(H + j)]);
      const double hn = rh[size_t(2 * H + j)];
      const double n = std::tanh(wx[size_t(2 * H + j)] + rg * hn);
      r[j] = rg, r[H + j] = u, r[2 * H + j] = n;
      r[rec_.hn_at + j] = hn;
      r[rec_.c_at + j] = 0;
      r[rec_.h_at + j] = (1 - u) * n + u * h[size_t(j)];
    }
  }
}

void RnnPass::forward() const {
  const int H = g_.hidden, D = g_.directions;
  for (int p = 0; p < g_.pseudo_layers(); ++p) {
    const int dir = p % D;
    for (int b = 0; b < batch_; ++b) {
      const int len = length(b);
      for (int s = 0; s < len; ++s) forward_step(p, dir, dir == 0 ? s : len - 1 - s, b);
      // The final state: the direction's last step's, or the initial one for an empty sample.
      const int last = len == 0 ? -1 : dir == 0 ? len - 1 : 0;
      const std::vector<double> h = last < 0
                                        ? state(op_.hx, p, b)
                                        : std::vector<double>(record(p, last, b) + rec_.h_at,
                                                              record(p, last, b) + rec_.h_at + H);
      store_state(op_.hy, p, b, h.data());
      if (g_.gates == 4) {
        const std::vector<double> c = last < 0
                                          ? state(op_.cx, p, b)
                                          : std::vector<double>(record(p, last, b) + rec_.c_at,
                                                                record(p, last, b) + rec_.c_at + H);
        store_state(op_.cy, p, b, c.data());
      }
    }
  }
  // y: the last layer's h of both directions; padded frames get paddingFill, or NaN where
  // the descriptor has none (cuDNN leaves them undefined).
  const int top = (g_.layers - 1) * D;
  const double pad = op_.y.has_fill ? op_.y.fill : std::numeric_limits<double>::quiet_NaN();
  for (int t = 0; t < steps_; ++t)
    for (int b = 0; b < batch_; ++b) {
      const int64_t at = rnn_data_offset(op_.y, t, b);
      if (at < 0) continue;
      for (int d = 0; d < D; ++d)
        for (int j = 0; j < H; ++j)
          store_elem(g_.elem, op_.y_data, at + d * H + j,
                     t < length(b) ? record(top + d, t, b)[rec_.h_at + j] : pad);
    }
}

void RnnPass::backward_step(int p, int dir, int t, int b, std::vector<double>& dh,
                            std::vector<double>& dc, std::vector<double>& dinput) const {
  const int H = g_.hidden, G = g_.gates;
  const int64_t in = g_.layer_input(p);
  double* r = record(p, t, b);
  double* dgx = r + rec_.dgx_at;
  double* dgh = r + rec_.dgh_at;
  std::vector<double> dh_prev(size_t(H), 0.0);
  if (G == 4) {
    const std::vector<double> cp = c_prev(p, dir, t, b);
    for (int j = 0; j < H; ++j) {
      const double i = r[j], f = r[H + j], cc = r[2 * H + j], o = r[3 * H + j];
      const double tc = std::tanh(r[rec_.c_at + j]);
      const double dct = dc[size_t(j)] + dh[size_t(j)] * o * (1 - tc * tc);
      dgx[j] = dct * cc * i * (1 - i);
      dgx[H + j] = dct * cp[size_t(j)] * f * (1 - f);
      dgx[2 * H + j] = dct * i * (1 - cc * cc);
      dgx[3 * H + j] = dh[size_t(j)] * tc * o * (1 - o);
      dc[size_t(j)] = dct * f;
    }
    for (int k = 0; k < G * H; ++k) dgh[k] = dgx[k];
  } else {
    const std::vector<double> hp = h_prev(p, dir, t, b);
    for (int j = 0; j < H; ++j) {
      const double rg = r[j], u = r[H + j], n = r[2 * H + j], hn = r[rec_.hn_at + j];
      const double dn = dh[size_t(j)] * (1 - u) * (1 - n * n);
      dgx[j] = dn * hn * rg * (1 - rg);
      dgx[H + j] = dh[size_t(j)] * (hp[size_t(j)] - n) * u * (1 - u);
      dgx[2 * H + j] = dn;
      dgh[j] = dgx[j], dgh[H + j] = dgx[H + j], dgh[2 * H + j] = dn * rg;
      dh_prev[size_t(j)] = dh[size_t(j)] * u;
    }
  }
  for (int gate = 0; gate < G; ++gate)
    for (int j = 0; j < H; ++j) {
      const double gx = operand(dgx[gate * H + j]), gh = operand(dgh[gate * H + j]);
      const int64_t wrow = g_.matrix_offset(p, gate) + int64_t(j) * in;
      for (int64_t k = 0; k < in; ++k) dinput[size_t(k)] += weight(op_.weights, wrow + k) * gx;
      const int64_t rrow = g_.matrix_offset(p, G + gate) + int64_t(j) * H;
      for (int k = 0; k < H; ++k) dh_prev[size_t(k)] += weight(op_.weights, rrow + k) * gh;
    }
  dh = dh_prev;
}

void RnnPass::backward_data() const {
  const int H = g_.hidden, D = g_.directions;
  // The gradient reaching each layer's output [t][b][D*H]: dy for the top layer, then what
  // the layer above gives its input.
  const int64_t width = int64_t(D) * H;
  std::vector<double> d_out(size_t(int64_t(steps_) * batch_ * width), 0.0);
  for (int t = 0; t < steps_; ++t)
    for (int b = 0; b < batch_; ++b) {
      if (t >= length(b)) continue;
      const int64_t at = rnn_data_offset(op_.y, t, b);
      for (int64_t k = 0; k < width; ++k)
        d_out[size_t((int64_t(t) * batch_ + b) * width + k)] =
            load_elem(g_.elem, op_.y_data, at + k);
    }
  for (int layer = g_.layers - 1; layer >= 0; --layer) {
    const int64_t in = g_.layer_input(layer * D);
    std::vector<double> d_in(size_t(int64_t(steps_) * batch_ * in), 0.0);
    for (int dir = 0; dir < D; ++dir) {
      const int p = layer * D + dir;
      for (int b = 0; b < batch_; ++b) {
        std::vector<double> dh = state(op_.dhy, p, b);
        std::vector<double> dc = g_.gates == 4 ? state(op_.dcy, p, b) : std::vector<double>();
        const int len = length(b);
        // The direction's steps, last processed first.
        for (int s = 0; s < len; ++s) {
          const int t = dir == 0 ? len - 1 - s : s;
          const int64_t row = int64_t(t) * batch_ + b;
          for (int j = 0; j < H; ++j) dh[size_t(j)] += d_out[size_t(row * width + dir * H + j)];
          std::vector<double> dinput(size_t(in), 0.0);
          backward_step(p, dir, t, b, dh, dc, dinput);
          for (int64_t k = 0; k < in; ++k) d_in[size_t(row * in + k)] += dinput[size_t(k)];
        }
        store_state(op_.dhx, p, b, dh.data());
        if (g_.gates == 4) store_state(op_.dcx, p, b, dc.data());
      }
    }
    d_out = std::move(d_in);
  }
  // dx: the first layer's input gradient; padded frames get x's paddingFill (or NaN).
  const double pad = op_.x.has_fill ? op_.x.fill : std::numeric_limits<double>::quiet_NaN();
  for (int t = 0; t < steps_; ++t)
    for (int b = 0; b < batch_; ++b) {
      const int64_t at = rnn_data_offset(op_.x, t, b);
      if (at < 0) continue;
      for (int k = 0; k < g_.input; ++k)
        store_elem(g_.elem, op_.dx, at + k,
                   t < length(b) ? d_out[size_t((int64_t(t) * batch_ + b) * g_.input + k)] : pad);
    }
}

void RnnPass::backward_weights() const {
  const int H = g_.hidden, G = g_.gates, D = g_.directions;
  // Summed in double over every step and sample, then added to dweightSpace once.
  std::vector<double> dw(size_t(g_.weight_elements()), 0.0);
  for (int p = 0; p < g_.pseudo_layers(); ++p) {
    const int dir = p % D;
    const int64_t in = g_.layer_input(p);
    for (int b = 0; b < batch_; ++b)
      for (int t = 0; t < length(b); ++t) {
        const double* r = record(p, t, b);
        const std::vector<double> x = layer_input(p, t, b), h = h_prev(p, dir, t, b);
        for (int gate = 0; gate < G; ++gate)
          for (int j = 0; j < H; ++j) {
            const double gx = r[rec_.dgx_at + gate * H + j], gh = r[rec_.dgh_at + gate * H + j];
            const int64_t wrow = g_.matrix_offset(p, gate) + int64_t(j) * in;
            for (int64_t k = 0; k < in; ++k)
              dw[size_t(wrow + k)] += operand(gx) * operand(x[size_t(k)]);
            const int64_t rrow = g_.matrix_offset(p, G + gate) + int64_t(j) * H;
            for (int k = 0; k < H; ++k) dw[size_t(rrow + k)] += operand(gh) * operand(h[size_t(k)]);
            if (g_.bias) {
              dw[size_t(g_.bias_offset(p, gate) + j)] += gx;
              dw[size_t(g_.bias_offset(p, G + gate) + j)] += gh;
            }
          }
      }
  }
  for (size_t k = 0; k < dw.size(); ++k)
    store_elem(g_.elem, op_.dweights, int64_t(k),
               load_elem(g_.elem, op_.dweights, int64_t(k)) + dw[k]);
}

// Every call writes its whole workspace (the emulated kernels' scratch).
void scribble(const RnnOperands& op) {
  auto* bytes = static_cast<unsigned char*>(op.workspace);
  for (size_t i = 0; i < op.workspace_bytes; ++i) bytes[i] = static_cast<unsigned char>(i * 31);
}

}  // namespace

void rnn_forward(const RnnOperands& op) {
  scribble(op);
  if (op.reserve) {
    RnnPass(op).forward();
    return;
  }
  // Inference: the records live on the host for the call only.
  std::vector<double> records(rnn_reserve_bytes(op.g, op.x) / sizeof(double));
  RnnOperands with_records = op;
  with_records.reserve = records.data();
  RnnPass(with_records).forward();
}

void rnn_backward_data(const RnnOperands& op) {
  scribble(op);
  RnnPass(op).backward_data();
}

void rnn_backward_weights(const RnnOperands& op) {
  scribble(op);
  RnnPass(op).backward_weights();
}

}  // namespace sonata::emu::dnn
