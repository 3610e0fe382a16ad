// LSTM and GRU against PyTorch: tests/fixtures/rnn/*.txt, written by
// tests/fixtures/make_rnn.py from torch.nn.LSTM / torch.nn.GRU in float64 on a ragged batch
// packed with pack_padded_sequence and a non-zero initial state. Outputs, final states and
// the gradients w.r.t. input, initial state and every parameter must agree within 1e-9.
#include "tests/models/rnn_torch_fixture.h"

using namespace sonata;
using sonata::testing::rnn_fixture::check_against_torch;

TEST_CASE("rnn: LSTM matches torch.nn.LSTM on a packed ragged batch (float64)", "[rnn][lstm]") {
  check_against_torch<LSTM>("lstm", true);
}

TEST_CASE("rnn: GRU matches torch.nn.GRU on a packed ragged batch (float64)", "[rnn][gru]") {
  check_against_torch<GRU>("gru", false);
}
