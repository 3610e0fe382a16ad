#include "train/loop/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"

namespace sonata {

Progress::Progress(ProgressMode mode, int64_t line_every)
    : quiet_(mode == ProgressMode::none || mode == ProgressMode::off),
      silent_(mode == ProgressMode::off),
      line_every_(std::max<int64_t>(line_every, 1)) {
  const bool tty = isatty(fileno(stderr));
  bar_ = mode == ProgressMode::bar || (mode == ProgressMode::automatic && tty);
  lines_ = mode == ProgressMode::lines || (mode == ProgressMode::automatic && !tty);
}

Progress::~Progress() {
  finish();
}

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  const int64_t total = int64_t(seconds + 0.5);
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", (long long)(total / 3600),
                  (long long)(total / 60 % 60), (long long)(total % 60));
  else
    std::snprintf(text, sizeof text, "%lld:%02lld", (long long)(total / 60),
                  (long long)(total % 60));
  return text;
}

void Progress::update(const ProgressState& s) {
  if (!bar_ && !lines_) return;
  char figures[192];
  std::snprintf(figures, sizeof figures, "loss %.4f  lr %.2e  %.0f %s/s  wait %.0f%%  ETA %s",
                s.loss, s.lr, s.items_per_second, s.item_name, 100.0 * s.data_wait_share,
                format_duration(s.eta_seconds).c_str());
  if (bar_) {
    constexpr int kWidth = 20;
    const double done =
        s.steps_in_epoch > 0
            ? std::clamp(double(s.step_in_epoch) / double(s.steps_in_epoch), 0.0, 1.0)
            : 0;
    const int filled = int(done * kWidth);
    std::string bar = std::string(size_t(filled), '#') + std::string(size_t(kWidth - filled), '-');
    last_ = str("epoch ", s.epoch + 1, "/", s.epochs, " [", bar, "] ", s.step_in_epoch, "/",
                s.steps_in_epoch, "  ", figures);
    std::fprintf(stderr, "\r\033[2K%s", last_.c_str());
    std::fflush(stderr);
    drawn_ = true;
  } else if (s.step % line_every_ == 0 || s.step == s.total_steps) {
    std::fprintf(stderr, "epoch %lld/%lld step %lld/%lld  %s\n", (long long)(s.epoch + 1),
                 (long long)s.epochs, (long long)s.step, (long long)s.total_steps, figures);
  }
}

void Progress::clear() {
  if (drawn_) std::fprintf(stderr, "\r\033[2K");
}

void Progress::print(const std::string& line) {
  if (quiet_) return;
  clear();
  std::fflush(stderr);
  std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
  if (drawn_) std::fprintf(stderr, "%s", last_.c_str());
  std::fflush(stderr);
}

void Progress::notice(const std::string& line) {
  if (silent_) return;
  if (!quiet_) return print(line);
  std::fflush(stdout);
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
}

}  // namespace sonata
