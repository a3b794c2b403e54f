// What the HDF5 readers and writers of the shard layouts share: an owned HDF5 identifier, and the
// library's error printing switched off (errors become exceptions naming the file). Internal to
// data_prep.
#pragma once
#include <hdf5.h>

namespace mlbert::data {

// Owns an HDF5 identifier.
class H5Id {
 public:
  H5Id() = default;
  H5Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  H5Id(H5Id&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  H5Id& operator=(H5Id&& o) noexcept {
    reset();
    id_ = o.id_;
    close_ = o.close_;
    o.id_ = -1;
    return *this;
  }
  ~H5Id() { reset(); }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  herr_t release() {  // closes now and reports the status (file close is where writes fail)
    herr_t status = 0;
    if (id_ >= 0 && close_) status = close_(id_);
    id_ = -1;
    return status;
  }

 private:
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = -1;
  }
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

inline void quiet_hdf5() {
  // HDF5 prints its error stack to stderr by default; errors are reported by exceptions instead.
  static const bool once = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)once;
}

}  // namespace mlbert::data
