// Output files that are either complete under their final name or absent: what every mlbert
// command writes (shards, checkpoints, corpus text, configs, stamps) goes through here.
//
// Design choice: a file is written under a hidden temporary name in its final directory,
// `.<name>.partial-<machine>-<pid>-<random>`, then fsynced, renamed over the final name and the
// directory fsynced, so a kill -9 (or a power cut) at any moment leaves either the old file, the
// new one, or a temporary name that no reader takes for output. The temporary names of writers
// that died on this machine are removed by the next writer of the same final name; those of other
// machines (a shared filesystem) or of live processes are left alone and ignored by every reader
// (`is_partial_name`).
//
// One rule for every output path: what exists there must be a regular file, which is replaced. A
// device, FIFO, socket or folder is refused by name (an output never turns /dev/null into a file or
// leaves a FIFO's reader with nothing); a symlink is written through: the file it points to is
// replaced atomically and the link stays, as a shell's `>` would write through it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace mlbert::files {

class AtomicFile {
 public:
  // Creates the temporary file beside `path` (whose directory must exist), or beside the file a
  // symlink at `path` points to; removes the temporaries of that name that killed writers on this
  // machine left. Throws naming `path` when what is there is not a regular file.
  explicit AtomicFile(std::filesystem::path path);
  // Not committed: the temporary file is removed and the final name is untouched.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Throws with the final path and errno named (a full disk, a file size limit).
  void write(const void* data, std::size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // fsync, close, rename over the final name, fsync the directory.
  void commit();

  // The file written: `path`, or the regular file a symlink at `path` points to.
  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temp_path() const { return temp_; }
  // The temporary's descriptor (close-on-exec), e.g. for a child process's output.
  int fd() const { return fd_; }

 private:
  [[noreturn]] void fail(const std::string& what, int error);
  std::filesystem::path path_;
  std::filesystem::path temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// One-call forms for files built in memory.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);
void copy_file_atomically(const std::filesystem::path& from, const std::filesystem::path& to);

// What an output written to `path` replaces: `path`, or the regular file a symlink there points
// to. Throws "<path>: <what is there> ..." when it is a device, FIFO, socket, folder, a symlink to
// one of these, or a symlink that leads nowhere.
std::filesystem::path output_target(const std::filesystem::path& path);

// Throws "<output>: is <input>, an input of this command ..." when `output` is (or links to) one of
// `inputs`: a command must never replace what it reads.
void refuse_replacing_inputs(const std::filesystem::path& output,
                             const std::vector<std::filesystem::path>& inputs);

// True for the temporary names AtomicFile writes: directory walkers must never take them for
// input or output.
bool is_partial_name(const std::filesystem::path& path);

// Removes `dir`'s temporaries of the final name `name` whose writer (a process of this machine)
// is gone; what each AtomicFile of that name does first, for callers that will not write it again.
void remove_dead_temporaries(const std::filesystem::path& dir, const std::string& name);

// Makes a rename or file creation in `dir` durable. Throws naming `dir` on failure.
void sync_directory(const std::filesystem::path& dir);

// This machine and pid namespace, as 8 hex digits: pids in temporary names are only meaningful
// where this key matches.
const std::string& machine_key();

// True when `pid` (a pid of this machine and namespace) is a live process (not a zombie).
bool process_alive(long pid);

// The text of a /proc file such as /proc/<pid>/stat, or "" when it cannot be read (the process
// has gone, possibly while it was being read: iostreams would throw then).
std::string read_proc_file(const std::filesystem::path& path);

}  // namespace mlbert::files
