// The shard reader process: the readers of hdf5_io.h return what the in-process readers return,
// and a reader that crashes, hangs or cannot start gives an error naming the shard, after which
// the next read works.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "data_prep/hdf5_direct.h"
#include "data_prep/hdf5_io.h"
#include "data_prep/shard_reader.h"
#include "test_util.h"
#include "tests/common/processes.h"

using namespace mlbert::data;
using mlbert::test::error_of;
using mlbert::test::make_sample;
using mlbert::test::TempDir;
using mlbert::test::children_of;
using mlbert::test::ProcessEntry;

namespace {

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  // Unset for the scope when `value` is empty.
  ScopedEnv(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const std::filesystem::path kHangingShard = std::filesystem::path(MLBERT_SOURCE_DIR) /
                                            "tests/fuzz/seeds/fuzz_data_shard/hdf5_heap_loop.hdf5";

}  // namespace

TEST_CASE("the shard reader process returns what the in-process readers return") {
  TempDir dir;
  std::vector<Sample> samples;
  for (int i = 0; i < 7; ++i) samples.push_back(make_sample(i, 5 + 9 * i));
  ShardFormat narrow;
  narrow.max_seq_length = 64;
  write_shard(dir / "fixed.hdf5", Layout::kFixed, samples, narrow);
  write_shard(dir / "varlen.hdf5", Layout::kVarlen, samples);
  ShardWriter packed(dir / "packed.hdf5", Layout::kPacked);
  packed.add(PackedRow{{samples[0], samples[1], samples[2]}});
  packed.add(PackedRow{{samples[3]}});
  packed.commit();
  ReadOptions o;
  o.vocab_size = 30522;
  const std::vector<int64_t> rows = {1, 0, 1};
  for (const char* name : {"fixed.hdf5", "varlen.hdf5", "packed.hdf5"}) {
    INFO(name);
    const auto path = dir / name;
    CHECK(inspect_shard(path).rows == direct::inspect_shard(path).rows);
    CHECK(inspect_shard(path).layout == direct::inspect_shard(path).layout);
    CHECK(inspect_shard(path).row_width == direct::inspect_shard(path).row_width);
    CHECK(read_lengths(path) == direct::read_lengths(path));
    CHECK(read_shard(path, o) == direct::read_shard(path, o));
    CHECK(read_rows(path, rows, o) == direct::read_rows(path, rows, o));
    CHECK(read_row_range(path, 1, 1, o) == direct::read_row_range(path, 1, 1, o));
  }
  CHECK(read_shard(dir / "varlen.hdf5", o) == samples);
  const auto rows_read = read_packed_shard(dir / "packed.hdf5", o);
  REQUIRE(rows_read.size() == 2);
  CHECK(rows_read[0].samples == std::vector<Sample>{samples[0], samples[1], samples[2]});
  // Errors keep their text and type across the process boundary.
  CHECK(error_of([&] { read_shard(dir / "absent.hdf5", o); }) ==
        error_of([&] { direct::read_shard(dir / "absent.hdf5", o); }));
  CHECK_THROWS_AS(read_row_range(dir / "varlen.hdf5", -1, 1, o), std::invalid_argument);
  CHECK_THAT(error_of([&] { read_packed_shard(dir / "varlen.hdf5", o); }),
             Catch::Contains("varlen.hdf5") && Catch::Contains("not a packed shard"));
}

TEST_CASE("a shard on which HDF5 never finishes is an error naming it after the read timeout") {
  // Found by fuzz_data_shard: a corrupt global heap sends HDF5 1.10 into an endless loop.
  REQUIRE(std::filesystem::exists(kHangingShard));
  const ScopedEnv timeout("MLBERT_SHARD_READ_TIMEOUT", "2");
  const auto start = std::chrono::steady_clock::now();
  const std::string error = error_of([&] { read_lengths(kHangingShard); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK_THAT(error, Catch::Contains("hdf5_heap_loop.hdf5") &&
                        Catch::Contains("HDF5 did not finish reading the file within 2 s"));
  CHECK(seconds >= 2);
  CHECK(seconds < 30);
  TempDir dir;
  write_shard(dir / "good.hdf5", Layout::kVarlen, std::vector<Sample>{make_sample(1, 9)});
  CHECK(read_shard(dir / "good.hdf5", {}).size() == 1);  // a fresh reader process
}

TEST_CASE("a fractional read timeout is kept and named as given") {
  REQUIRE(std::filesystem::exists(kHangingShard));
  const ScopedEnv timeout("MLBERT_SHARD_READ_TIMEOUT", "0.25");
  CHECK(shard_read_timeout_seconds() == 0.25);
  const auto start = std::chrono::steady_clock::now();
  const std::string error = error_of([&] { read_lengths(kHangingShard); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK_THAT(error, Catch::Contains("within 0.25 s"));
  CHECK(seconds >= 0.25);
  CHECK(seconds < 30);
}

TEST_CASE(
    "HDF5 misreading memory on a shard gives an error naming it or rows that pass the checks") {
  // Found by fuzz_data_shard: a corrupt global heap makes HDF5 1.10 read past its heap buffer
  // (ASan reports it; without ASan the bytes it reads decide what follows), and a corrupt vlen
  // length makes it allocate a 3 GiB conversion buffer. Either way the caller gets an error naming
  // the file or rows that passed the readers' checks, and the next read works.
  const std::filesystem::path seeds =
      std::filesystem::path(MLBERT_SOURCE_DIR) / "tests/fuzz/seeds/fuzz_data_shard";
  TempDir dir;
  // Under a sanitizer build the reader's report goes here, not to the test's (or CI's) output.
  const ScopedEnv log("MLBERT_SHARD_READER_LOG", (dir / "reader.log").string());
  ReadOptions o;
  o.vocab_size = 30522;
  for (const char* name : {"hdf5_global_heap_overread.hdf5", "hdf5_vlen_length_3gib.hdf5"}) {
    INFO(name);
    const auto path = seeds / name;
    REQUIRE(std::filesystem::exists(path));
    // Rows that come back have passed the readers' checks; an error must name the file.
    for (const std::string& error :
         {error_of([&] { read_lengths(path); }), error_of([&] { read_shard(path, o); })})
      if (error != "<no error>") CHECK_THAT(error, Catch::Contains(name));
  }
  write_shard(dir / "good.hdf5", Layout::kVarlen, std::vector<Sample>{make_sample(1, 9)});
  CHECK(read_shard(dir / "good.hdf5", o).size() == 1);
}

TEST_CASE("a reader process that crashes is an error naming the shard and the signal") {
  TempDir dir;
  write_shard(dir / "good.hdf5", Layout::kVarlen, std::vector<Sample>{make_sample(1, 9)});
  const auto crasher = dir / "crashing-reader";
  mlbert::test::write_file(crasher, "#!/bin/sh\nkill -SEGV $$\n");
  ::chmod(crasher.c_str(), 0755);
  {
    const ScopedEnv reader("MLBERT_SHARD_READER", crasher.string());
    CHECK_THAT(error_of([&] { read_shard(dir / "good.hdf5", {}); }),
               Catch::Contains("good.hdf5: HDF5 crashed reading the file") &&
                   Catch::Contains("killed by signal 11"));
  }
  CHECK(read_shard(dir / "good.hdf5", {}).size() == 1);  // the real reader, started afresh
}

TEST_CASE("a reader process writes to MLBERT_SHARD_READER_LOG or nowhere, never to our output") {
  // Under mpirun a rank's stdout and stderr are the launcher's pipes: a reader holding them made
  // mpirun miss an abort. The stand-in reader says where its output goes, then crashes.
  TempDir dir;
  write_shard(dir / "good.hdf5", Layout::kVarlen, std::vector<Sample>{make_sample(1, 9)});
  const auto talker = dir / "talking-reader";
  mlbert::test::write_file(talker,
                           "#!/bin/sh\necho reader-stdout\necho reader-stderr >&2\n"
                           "out=$(readlink /proc/$$/fd/1); err=$(readlink /proc/$$/fd/2)\n"
                           "echo \"$out\" > " +
                               (dir / "fd1").string() + "\necho \"$err\" > " +
                               (dir / "fd2").string() + "\nkill -SEGV $$\n");
  ::chmod(talker.c_str(), 0755);
  const ScopedEnv reader("MLBERT_SHARD_READER", talker.string());
  SECTION("no log: /dev/null") {
    const ScopedEnv no_log("MLBERT_SHARD_READER_LOG", std::nullopt);
    CHECK_THAT(error_of([&] { inspect_shard(dir / "good.hdf5"); }),
               Catch::Contains("killed by signal 11"));
    CHECK(read_text(dir / "fd1") == "/dev/null\n");
    CHECK(read_text(dir / "fd2") == "/dev/null\n");
  }
  SECTION("a log file: both streams appended to it") {
    const ScopedEnv log("MLBERT_SHARD_READER_LOG", (dir / "reader.log").string());
    CHECK_THAT(error_of([&] { inspect_shard(dir / "good.hdf5"); }),
               Catch::Contains("killed by signal 11"));
    CHECK(read_text(dir / "reader.log") == "reader-stdout\nreader-stderr\n");
    CHECK(read_text(dir / "fd1") == (dir / "reader.log").string() + "\n");
  }
}

TEST_CASE("a shard reader that cannot start is a clear error naming it") {
  TempDir dir;
  write_shard(dir / "good.hdf5", Layout::kVarlen, std::vector<Sample>{make_sample(1, 9)});
  const ScopedEnv reader("MLBERT_SHARD_READER", (dir / "no-such-reader").string());
  CHECK_THAT(error_of([&] { inspect_shard(dir / "good.hdf5"); }),
             Catch::Contains("good.hdf5: cannot start the shard reader") &&
                 Catch::Contains("no-such-reader") && Catch::Contains("MLBERT_SHARD_READER"));
}

TEST_CASE("a ShardReader reads its shard as it was opened, and opens it again in a new reader") {
  TempDir dir;
  std::vector<Sample> before, after;
  for (int i = 0; i < 7; ++i) before.push_back(make_sample(i, 5 + 9 * i));
  for (int i = 0; i < 7; ++i) after.push_back(make_sample(100 + i, 40 - 3 * i));
  const auto path = dir / "varlen.hdf5";
  write_shard(path, Layout::kVarlen, before);
  ShardWriter packed_writer(dir / "packed.hdf5", Layout::kPacked);
  packed_writer.add(PackedRow{{before[0], before[1]}});
  packed_writer.add(PackedRow{{before[2]}});
  packed_writer.commit();
  ReadOptions o;
  o.vocab_size = 30522;
  const std::vector<int64_t> rows = {6, 0, 3, 3};

  ShardReader reader(path);
  CHECK(reader.layout() == Layout::kVarlen);
  CHECK(reader.rows() == 7);
  CHECK(reader.read_rows(rows, o) == direct::read_rows(path, rows, o));
  CHECK(reader.read_range(2, 3, o) == direct::read_row_range(path, 2, 3, o));
  ShardReader packed(dir / "packed.hdf5");
  const auto packed_rows = packed.read_packed(o);
  REQUIRE(packed_rows.size() == 2);
  CHECK(packed_rows[0].samples == std::vector<Sample>{before[0], before[1]});
  CHECK(packed_rows[1].samples == std::vector<Sample>{before[2]});

  // Kept open: a new shard renamed over the name changes what one-shot reads see, not this one.
  write_shard(path, Layout::kVarlen, after);
  CHECK(read_rows(path, rows, o) == direct::read_rows(path, rows, o));
  CHECK(reader.read_rows(rows, o) ==
        std::vector<Sample>{before[6], before[0], before[3], before[3]});

  // The reader process killed (a hanging shard, a 2 s limit): the next read opens the shard again.
  {
    const ScopedEnv timeout("MLBERT_SHARD_READ_TIMEOUT", "2");
    CHECK_THAT(error_of([&] { read_lengths(kHangingShard); }), Catch::Contains("did not finish"));
  }
  CHECK(reader.read_rows(rows, o) == std::vector<Sample>{after[6], after[0], after[3], after[3]});

  ShardReader moved = std::move(reader);
  CHECK(moved.read_range(0, 1, o) == std::vector<Sample>{after[0]});
  CHECK_THAT(error_of([&] { reader.read_range(0, 1, o); }), Catch::Contains("moved-from"));
}

namespace {

// The pid of `client`'s shard reader process (the one its ReaderProcess started), or -1.
pid_t reader_pid(pid_t client = ::getpid()) {
  const std::string name = shard_reader_executable().filename().string();
  for (const auto& child : children_of(client)) {
    std::error_code ec;
    const auto exe =
        std::filesystem::read_symlink("/proc/" + std::to_string(child.pid) + "/exe", ec);
    if (!ec && exe.filename().string() == name) return child.pid;
  }
  return -1;
}

// A field of /proc/<pid>/status ("Threads", "VmHWM"), as a number; -1 when absent.
long status_field(pid_t pid, const std::string& name) {
  std::istringstream status(read_text("/proc/" + std::to_string(pid) + "/status"));
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(name + ":", 0) == 0) return std::stol(line.substr(name.size() + 1));
  return -1;
}

}  // namespace

TEST_CASE("every read runs in a fork of the reader process, which itself never holds a shard") {
  // HDF5 1.10 reading a corrupt shard can fill rows from memory the file does not define; a
  // fuzzer found a corrupt packed shard answered with rows of zeros after another shard was read,
  // and rejected when read alone. Reads therefore run in forks of a reader process that reads
  // nothing itself, so that no read sees what an earlier one left in memory. Seen from outside:
  // the reader process's own peak memory does not grow with the shards it reads for us.
  TempDir dir;
  std::vector<Sample> samples;
  for (int i = 0; i < 4000; ++i) samples.push_back(make_sample(i, 512));
  write_shard(dir / "big.hdf5", Layout::kVarlen, samples);
  write_shard(dir / "small.hdf5", Layout::kVarlen, std::vector<Sample>{make_sample(1, 9)});
  ReadOptions o;
  o.vocab_size = 30522;
  REQUIRE(read_shard(dir / "small.hdf5", o).size() == 1);  // the reader process is running
  const pid_t reader = reader_pid();
  REQUIRE(reader > 0);
  const long before = status_field(reader, "VmHWM");
  REQUIRE(before > 0);
  REQUIRE(read_shard(dir / "big.hdf5", o) == samples);  // ~16 MB of ids and segments decoded
  const long grown = status_field(reader, "VmHWM") - before;
  INFO("the reader process's peak grew by " << grown << " kB over " << before << " kB");
  CHECK(reader_pid() == reader);  // the same process: nothing crashed and restarted
  CHECK(grown < 2048);
  // A read that fails in its fork leaves the reader process serving.
  CHECK_THAT(error_of([&] { read_shard(dir / "absent.hdf5", o); }), Catch::Contains("absent.hdf5"));
  CHECK(read_shard(dir / "small.hdf5", o).size() == 1);
  CHECK(reader_pid() == reader);
}

TEST_CASE("a read whose fork dies is an error naming the shard, and the reader serves on") {
  // A fork of the reader killed while HDF5 reads (here: the CPU limit, on a shard that sends
  // HDF5 1.10 into an endless loop) is an error naming the shard and the signal, reported by the
  // reader process without waiting for the read timeout; the reader itself goes on serving.
  REQUIRE(std::filesystem::exists(kHangingShard));
  const ScopedEnv timeout("MLBERT_SHARD_READ_TIMEOUT", "120");
  TempDir dir;
  write_shard(dir / "good.hdf5", Layout::kVarlen, std::vector<Sample>{make_sample(1, 9)});
  REQUIRE(read_shard(dir / "good.hdf5", {}).size() == 1);  // the reader process is running
  const pid_t reader = reader_pid();
  REQUIRE(reader > 0);
  // A fork inherits the reader's CPU limit and starts its count at zero: 2 s past what the reader
  // has used so far ends a fork that spins that long.
  std::istringstream stat(read_text("/proc/" + std::to_string(reader) + "/stat"));
  std::string field;
  std::vector<std::string> fields;
  while (stat >> field) fields.push_back(field);
  REQUIRE(fields.size() > 15);  // utime and stime are fields 14 and 15 (no spaces in the name)
  const long ticks = std::stol(fields[13]) + std::stol(fields[14]);
  const rlimit cpu{static_cast<rlim_t>(ticks / ::sysconf(_SC_CLK_TCK) + 2), RLIM_INFINITY};
  REQUIRE(::prlimit(reader, RLIMIT_CPU, &cpu, nullptr) == 0);
  const auto start = std::chrono::steady_clock::now();
  const std::string error = error_of([&] { read_lengths(kHangingShard); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK_THAT(error, Catch::Contains("hdf5_heap_loop.hdf5: HDF5 crashed reading the file") &&
                        Catch::Contains("signal " + std::to_string(SIGXCPU)));
  CHECK(seconds < 60);  // the reader answered; the client did not wait for its 120-s timeout
  CHECK(reader_pid() == reader);
  const rlimit unlimited{RLIM_INFINITY, RLIM_INFINITY};
  ::prlimit(reader, RLIMIT_CPU, &unlimited, nullptr);
  CHECK(read_shard(dir / "good.hdf5", {}).size() == 1);
}

TEST_CASE("the reader process runs one thread, so that its forks inherit no held lock") {
  // Every read forks the reader process. A fork copies only the thread that called it; a lock
  // another thread held at that moment stays held in the fork for good. A watcher thread in the
  // reader, caught starting (inside ASan's allocator) by a fork, hung the fork's first allocation
  // in CI. So the reader runs one thread, and its watcher of the client is a process.
  TempDir dir;
  write_shard(dir / "good.hdf5", Layout::kVarlen, std::vector<Sample>{make_sample(1, 9)});
  REQUIRE(read_shard(dir / "good.hdf5", {}).size() == 1);  // the reader process is running
  const pid_t reader = reader_pid();
  REQUIRE(reader > 0);
  CHECK(status_field(reader, "Threads") == 1);
}

TEST_CASE("a client killed while its read hangs leaves no reader process behind") {
  // The reader process, its watcher and the read's fork all end once the client is gone, even
  // while HDF5 spins in the fork (a shard that loops HDF5 1.10 forever).
  REQUIRE(std::filesystem::exists(kHangingShard));
  const pid_t client = ::fork();
  REQUIRE(client >= 0);
  if (client == 0) {
    ::setenv("MLBERT_SHARD_READ_TIMEOUT", "600", 1);
    try {
      read_lengths(kHangingShard);
    } catch (...) {
    }
    ::_exit(3);  // not reached within the test: it is killed first
  }
  // The client's reader and the reader's children (the fork reading the shard among them).
  std::vector<pid_t> tree;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    const pid_t reader = reader_pid(client);
    const auto children = reader > 0 ? children_of(reader) : std::vector<ProcessEntry>{};
    // The read's fork spinning in HDF5 (R); the reader's other children wait (S).
    if (std::any_of(children.begin(), children.end(), [](auto& c) { return c.state == 'R'; })) {
      tree = {reader};
      for (const auto& child : children) tree.push_back(child.pid);
      break;
    }
    ::usleep(20000);
  }
  REQUIRE(tree.size() >= 2);
  ::usleep(200000);  // into HDF5's loop
  ::kill(client, SIGKILL);
  int status = 0;
  REQUIRE(::waitpid(client, &status, 0) == client);
  CHECK(WIFSIGNALED(status));
  // Gone: no /proc entry, or a zombie left for its new parent to reap.
  const auto alive = [](pid_t pid) {
    for (const ProcessEntry& p : mlbert::test::process_table())
      if (p.pid == pid) return p.state != 'Z';
    return false;
  };
  std::vector<pid_t> left = tree;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!left.empty() && std::chrono::steady_clock::now() < until) {
    std::erase_if(left, [&](pid_t pid) { return !alive(pid); });
    if (!left.empty()) ::usleep(20000);
  }
  for (pid_t pid : left) ::kill(pid, SIGKILL);  // leave nothing spinning behind a failure
  INFO("processes left 20 s after the client was killed: " << left.size() << " of "
                                                            << tree.size());
  CHECK(left.empty());
}
