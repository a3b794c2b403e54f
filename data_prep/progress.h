// A one-line progress bar on stderr (files, samples, throughput, ETA) that draws only when stderr
// is a terminal, so logs and CI output stay clean. Safe to update from several worker threads.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace mlbert::data {

class Progress {
 public:
  // `enabled` < 0: draw when stderr is a terminal; 0: never; > 0: always.
  Progress(std::string label, int64_t total_files, int64_t total_bytes, int enabled = -1);
  ~Progress();

  void add_bytes(int64_t bytes);
  void add_samples(int64_t samples);
  void file_done();
  void finish();  // draws the final line and a newline
  bool enabled() const { return enabled_; }

 private:
  void draw(bool force);

  std::string label_;
  int64_t total_files_, total_bytes_;
  bool enabled_;
  std::atomic<int64_t> files_{0}, bytes_{0}, samples_{0};
  std::mutex draw_mutex_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool finished_ = false;
};

}  // namespace mlbert::data
