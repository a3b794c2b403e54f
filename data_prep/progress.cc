// Progress bar: redraws at most 10 times a second; the ETA extrapolates bytes read so far.
#include "data_prep/progress.h"

#include <unistd.h>

#include <cstdio>

namespace mlbert::data {

Progress::Progress(std::string label, int64_t total_files, int64_t total_bytes, int enabled)
    : label_(std::move(label)),
      total_files_(total_files),
      total_bytes_(total_bytes),
      enabled_(enabled < 0 ? ::isatty(STDERR_FILENO) == 1 : enabled > 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() {
  if (enabled_ && !finished_) std::fputc('\n', stderr);
}

void Progress::add_bytes(int64_t bytes) {
  bytes_ += bytes;
  draw(false);
}
void Progress::add_samples(int64_t samples) {
  samples_ += samples;
  draw(false);
}
void Progress::file_done() {
  ++files_;
  draw(true);
}
void Progress::finish() {
  draw(true);
  if (enabled_ && !finished_) std::fputc('\n', stderr);
  finished_ = true;
}

void Progress::draw(bool force) {
  if (!enabled_) return;
  std::unique_lock lock(draw_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double done =
      total_bytes_ > 0 ? static_cast<double>(bytes_) / static_cast<double>(total_bytes_) : 0.0;
  char eta[32] = "--:--";
  if (done > 0.0 && done < 1.0) {
    const auto left = static_cast<int64_t>(elapsed * (1.0 - done) / done);
    std::snprintf(eta, sizeof eta, "%02lld:%02lld", static_cast<long long>(left / 60),
                  static_cast<long long>(left % 60));
  } else if (done >= 1.0) {
    std::snprintf(eta, sizeof eta, "00:00");
  }
  constexpr int kWidth = 24;
  const int filled = static_cast<int>(done * kWidth);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : '.';
  bar[kWidth] = '\0';
  std::fprintf(stderr, "\r%s [%s] %3.0f%%  files %lld/%lld  samples %lld  %.1f MB/s  ETA %s  ",
               label_.c_str(), bar, done * 100.0, static_cast<long long>(files_.load()),
               static_cast<long long>(total_files_), static_cast<long long>(samples_.load()),
               elapsed > 0 ? static_cast<double>(bytes_) / 1e6 / elapsed : 0.0, eta);
  std::fflush(stderr);
}

}  // namespace mlbert::data
