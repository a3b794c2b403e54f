// libFuzzer target: arbitrary bytes as an HDF5 training shard, through every reader entry point
// (inspect_shard, read_lengths, read_shard, read_rows, read_row_range, read_packed_shard).
//
// Each input is read twice. First through hdf5_io.h, as every caller does: HDF5 then runs in the
// shard reader process, so a file that crashes or hangs the library must come back as an error
// naming the file. That process is mlbert-shard-reader-fuzz, built with the same sanitizers as
// this target, so a memory error HDF5 makes on the file (an uninstrumented library, caught by
// ASan's interceptors) crashes it there, contained. When the library survived it, the same calls
// run through hdf5_direct.h, each call in a fork of a small server this process forks at the start,
// as the reader process runs each read in a fork of itself (an HDF5 memory error the reader
// survived by chance ends the fork, not the fuzzer; below), whose coverage is added to the
// fuzzer's so that the readers' own checks guide it, and must return exactly what the reader
// process returned. Every
// result must keep the readers' promises: each sample valid for the format (length, segment ids,
// ascending masked positions inside the sequence, ids below the vocabulary size, NSP label 0/1),
// read_lengths agreeing with the rows, read_rows agreeing with read_shard, rows past the end
// refused.
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <sanitizer/allocator_interface.h>
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data_prep/hdf5_direct.h"
#include "data_prep/hdf5_io.h"
#include "data_prep/sample_codec.h"
#include "tests/data_prep/shard_read_checks.h"
#include "tests/fuzz/fuzz_scratch.h"

// Under ASan, a malloc inside HDF5 larger than any real shard needs returns null (HDF5 then reports
// an error): a corrupt vlen length makes HDF5 1.10 ask for a conversion buffer of up to 16 GiB. The
// reader process gets the same options (kAsanOptions, set for it in LLVMFuzzerInitialize), so both
// sides of the comparison see the same failures. The library's own leaks on its error paths are
// not this project's.
constexpr const char* kAsanOptions = "allocator_may_return_null=1:max_allocation_size_mb=512";
extern "C" const char* __asan_default_options() {
  return kAsanOptions;
}
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libhdf5_serial.so\n";
}

namespace {

namespace data = mlbert::data;
using data::Layout;
using data::ReadOptions;
using data::Sample;
using mlbert::fuzz::check_promises;
using mlbert::fuzz::read_all;
using mlbert::fuzz::Reads;
using mlbert::fuzz::same;
using mlbert::fuzz::same_info;
using mlbert::fuzz::same_packed;

constexpr int32_t kVocabSize = 30522;

struct Contained {
  static auto inspect(const auto& p) { return data::inspect_shard(p); }
  static auto lengths(const auto& p) { return data::read_lengths(p); }
  static auto shard(const auto& p, const auto& o) { return data::read_shard(p, o); }
  static auto packed(const auto& p, const auto& o) { return data::read_packed_shard(p, o); }
  static auto rows(const auto& p, const auto& r, const auto& o) { return data::read_rows(p, r, o); }
  static auto range(const auto& p, int64_t b, int64_t n, const auto& o) {
    return data::read_row_range(p, b, n, o);
  }
};

}  // namespace

// The second pass runs in forks, never in the fuzzer. HDF5 is not instrumented, so a read past one
// of its buffers is caught only where it touches unmapped memory, which depends on the process's
// heap: fuzzing (2026-12-03) found a corrupt global heap that H5HG_read over-reads, which the
// reader process survived and this process, its heap shaped by thousands of inputs, did not. Such a
// crash is HDF5's and contained in production (the reader process), so the fork dies of it instead
// of the fuzzer (a fault with its pc in libhdf5, or a sanitizer report whose first frame below the
// sanitizer's and libc's is there, or the sanitizer dying with libhdf5 on the stack: later
// campaigns found H5HG_read handing memcpy a negative size, a wild source, or a size of terabytes).
// The forks' coverage counters are added to the fuzzer's, so the readers' checks still guide it;
// a mismatch or a memory error in the project's code still ends the fuzzer.
namespace {

// This executable's coverage counters (its __sancov_cntrs section, which libFuzzer reads after each
// input), found through the ELF section table: referring to the linker's __start/__stop symbols
// from the code keeps clang's instrumentation from registering the counters at all.
struct Counters {
  uint8_t* begin = nullptr;
  size_t size = 0;
};

Counters find_counters() {
  Counters c;
  std::ifstream exe("/proc/self/exe", std::ios::binary);
  Elf64_Ehdr eh{};
  if (!exe.read(reinterpret_cast<char*>(&eh), sizeof eh) || eh.e_shentsize != sizeof(Elf64_Shdr))
    return c;
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  exe.seekg(static_cast<std::streamoff>(eh.e_shoff));
  if (!exe.read(reinterpret_cast<char*>(sections.data()),
                static_cast<std::streamsize>(sections.size() * sizeof(Elf64_Shdr))) ||
      eh.e_shstrndx >= sections.size())
    return c;
  const Elf64_Shdr& names = sections[eh.e_shstrndx];
  std::string table(names.sh_size, '\0');
  exe.seekg(static_cast<std::streamoff>(names.sh_offset));
  if (!exe.read(table.data(), static_cast<std::streamsize>(table.size()))) return c;
  uintptr_t bias = 0;  // where the executable (the first object dl_iterate_phdr lists) is loaded
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        *static_cast<uintptr_t*>(out) = info->dlpi_addr;
        return 1;
      },
      &bias);
  for (const Elf64_Shdr& sh : sections)
    if (sh.sh_name < table.size() &&
        std::strcmp(table.c_str() + sh.sh_name, "__sancov_cntrs") == 0 && sh.sh_size > 0) {
      c.begin = reinterpret_cast<uint8_t*>(bias + sh.sh_addr);
      c.size = sh.sh_size;
    }
  return c;
}

// The counters, and a shared page range of their size a fork copies its counters into.
struct CounterCopy {
  Counters own;
  uint8_t* shared = nullptr;
};

const CounterCopy& counter_copy() {
  static const CounterCopy copy = [] {
    CounterCopy c;
    c.own = find_counters();
    if (c.own.size == 0) return c;
    void* p = mmap(nullptr, c.own.size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) c.shared = static_cast<uint8_t*>(p);
    return c;
  }();
  return copy;
}

// How a read's fork exits when it answered, and when HDF5 crashed in it; how long it may take.
constexpr int kForkAnswered = 0, kForkHdf5Crashed = 4;
constexpr int kForkSeconds = 20;

// Is `pc` inside the HDF5 library's code?
bool in_hdf5(const void* pc) {
  Dl_info info;
  return pc && dladdr(pc, &info) && info.dli_fname &&
         std::string_view(info.dli_fname).find("libhdf5") != std::string_view::npos;
}

// True when a frame of the calling thread's stack is in libhdf5. The project registers no callbacks
// with HDF5 (hdf5_io.cc only turns its error printing off), so a fault or a death with libhdf5 on
// the stack is in code HDF5 called (libc's memcpy through the sanitizer's interceptor): HDF5's.
constexpr int kMaxStackFrames = 64;
bool hdf5_on_stack() {
  void* frames[kMaxStackFrames];
  const int n = backtrace(frames, kMaxStackFrames);
  for (int i = 0; i < n; ++i)
    if (in_hdf5(frames[i])) return true;
  return false;
}

struct sigaction sanitizer_sigsegv, sanitizer_sigbus;  // the handlers the fork replaces

void on_fork_fault(int signo, siginfo_t*, void* context) {
  const void* pc = nullptr;
#if defined(__x86_64__)
  pc = reinterpret_cast<const void*>(
      static_cast<const ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  pc = reinterpret_cast<const void*>(static_cast<const ucontext_t*>(context)->uc_mcontext.pc);
#endif
  // The pc in libhdf5, or in libc's memcpy called by HDF5 through the interceptor (a campaign on
  // 2026-12-03 ended on H5HG_read handing memcpy a source of 0x2c: the sanitizer's handler
  // reported it, yet the fork's exit did not say HDF5's).
  if (in_hdf5(pc) || hdf5_on_stack()) _exit(kForkHdf5Crashed);
  // A fault in the project's code: the sanitizer's handler takes the repeated fault and reports it.
  sigaction(signo, signo == SIGBUS ? &sanitizer_sigbus : &sanitizer_sigsegv, nullptr);
}

// A sanitizer's report in the fork (a memcpy interceptor catching HDF5 passing it a length read
// from past its buffer): HDF5's when the first frame below the sanitizer's own is in libhdf5.
void on_fork_report(const char* report) {
  std::string_view text(report);
  for (std::size_t at = text.find("    #"); at != std::string_view::npos;
       at = text.find("    #", at + 1)) {
    const std::string_view frame = text.substr(at, text.find('\n', at) - at);
    // The sanitizer's frames, and libc's memcpy and its kin called through them.
    if (frame.find("__interceptor_") != std::string_view::npos ||
        frame.find("__asan") != std::string_view::npos ||
        frame.find("__sanitizer") != std::string_view::npos ||
        frame.find("libc.so") != std::string_view::npos ||
        frame.find("sysdeps/") != std::string_view::npos)
      continue;
    if (frame.find("libhdf5") != std::string_view::npos) _exit(kForkHdf5Crashed);
    return;  // the project's code: the report stands and ends the fork, then the fuzzer
  }
}

// The sanitizer giving up in the fork without a report: an internal CHECK of its own failing
// inside an interceptor HDF5 called (a later campaign found H5HG_read handing memcpy a 3.6 TB size,
// which ASan's range check refuses with "CHECK failed ... size <= 1 << 40" and dies, calling no
// report callback): HDF5's when libhdf5 is on the stack.
void on_fork_death() {
  if (hdf5_on_stack()) _exit(kForkHdf5Crashed);
}
ssize_t read_fd(int fd, void* buffer, std::size_t size) {
  ssize_t n;
  while ((n = ::read(fd, buffer, size)) < 0 && errno == EINTR) {
  }
  return n;
}

// Encoding of each read's result, for a read run in a fork of the server (ServedDirect).
void put_result(data::ByteWriter& out, const data::ShardInfo& info) {
  out.put<std::uint8_t>(static_cast<std::uint8_t>(info.layout));
  out.put<std::int64_t>(info.rows);
  out.put<std::int32_t>(info.row_width);
}
void get_result(data::ByteReader& in, data::ShardInfo& info) {
  info.layout = static_cast<Layout>(in.get<std::uint8_t>());
  info.rows = in.get<std::int64_t>();
  info.row_width = in.get<std::int32_t>();
}
void put_result(data::ByteWriter& out, const std::vector<int32_t>& lengths) {
  out.put<std::uint64_t>(lengths.size());
  out.put_array(lengths);
}
void get_result(data::ByteReader& in, std::vector<int32_t>& lengths) {
  lengths = in.get_array<int32_t>(in.get<std::uint64_t>());
}
void put_result(data::ByteWriter& out, const std::vector<Sample>& samples) {
  data::put_samples(out, samples);
}
void get_result(data::ByteReader& in, std::vector<Sample>& samples) {
  samples = data::get_samples(in);
}
void put_result(data::ByteWriter& out, const std::vector<data::PackedRow>& rows) {
  out.put<std::uint64_t>(rows.size());
  for (const auto& row : rows) data::put_samples(out, row.samples);
}
void get_result(data::ByteReader& in, std::vector<data::PackedRow>& rows) {
  rows.resize(in.get<std::uint64_t>());
  for (auto& row : rows) row.samples = data::get_samples(in);
}

// The second pass's server: a fork of this process taken in LLVMFuzzerInitialize, before libFuzzer
// has loaded a corpus or run an input, that runs each read of the second pass in a fork of itself,
// as the reader process runs each read in a fork of itself. HDF5 1.10 fills a corrupt shard's rows
// from memory the file does not define, in a fresh process with zeros, after other reads with what
// they left (a campaign found a packed shard whose picked rows the reader answered with zero ids
// and the second pass, after its whole-shard read, rejected or answered with other ids): each read
// starting from a state without earlier reads is what makes the two passes comparable. The forks
// were once taken from the fuzzer itself; each then copied the page tables of a process that grows
// to hundreds of MB as it fuzzes, and tore them down at exit (77% of the target's busy time in the
// kernel, measured 2026-12-05): the server stays the size it had at the start. A read's fork
// starts its coverage counters from zero and copies them to the shared mapping as it ends; the
// fuzzer adds them to its own, so the readers' checks guide it.
enum class Op : std::uint8_t { inspect, lengths, shard, packed, rows, range };

struct Request {
  Op op = Op::inspect;
  std::string path;
  ReadOptions options;
  std::vector<int64_t> rows;     // Op::rows
  int64_t begin = 0, count = 0;  // Op::range
};

// How a read's fork ended, as the server tells the fuzzer.
enum class Outcome : std::uint8_t {
  answered,      // the read's answer (a result or the error it threw) follows
  hdf5_crashed,  // a memory error of HDF5's (kForkHdf5Crashed)
  hung,          // no answer within kForkSeconds: HDF5 looping where the reader process finished
  failed,        // a sanitizer's report in the project's code, or a signal; its exit status follows
};

bool write_all(int fd, const std::byte* bytes, std::size_t size) {
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::send(fd, bytes + done, size - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool read_exactly(int fd, void* buffer, std::size_t size) {
  auto* p = static_cast<std::byte*>(buffer);
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = read_fd(fd, p + done, size - done);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// A message on the server's socket: its size, then its bytes.
bool send_message(int fd, std::vector<std::byte>& bytes) {
  const std::uint64_t size = bytes.size();
  return write_all(fd, reinterpret_cast<const std::byte*>(&size), sizeof size) &&
         write_all(fd, bytes.data(), bytes.size());
}
bool receive_message(int fd, std::vector<std::byte>& bytes) {
  std::uint64_t size = 0;
  if (!read_exactly(fd, &size, sizeof size)) return false;
  bytes.resize(size);
  return read_exactly(fd, bytes.data(), size);
}

// The read a request names, through hdf5_direct.h, and its answer encoded: 0 and the result, or
// 1 (std::invalid_argument) or 2 (any other exception) and the error's text.
template <typename Read>
void answer(data::ByteWriter& out, Read read) {
  try {
    const auto result = read();
    out.put<std::uint8_t>(0);
    put_result(out, result);
  } catch (const std::invalid_argument& e) {
    out.put<std::uint8_t>(1);
    out.put_string(e.what());
  } catch (const std::exception& e) {
    out.put<std::uint8_t>(2);
    out.put_string(e.what());
  }
}

void run_read(data::ByteWriter& out, const Request& r) {
  const std::filesystem::path path = r.path;
  const ReadOptions& o = r.options;
  switch (r.op) {
    case Op::inspect:
      return answer(out, [&] { return data::direct::inspect_shard(path); });
    case Op::lengths:
      return answer(out, [&] { return data::direct::read_lengths(path); });
    case Op::shard:
      return answer(out, [&] { return data::direct::read_shard(path, o); });
    case Op::packed:
      return answer(out, [&] { return data::direct::read_packed_shard(path, o); });
    case Op::rows:
      return answer(out, [&] { return data::direct::read_rows(path, r.rows, o); });
    case Op::range:
      return answer(out, [&] { return data::direct::read_row_range(path, r.begin, r.count, o); });
  }
}

// Runs one read in a fork and tells the fuzzer how it ended (an Outcome, then the answer or the
// exit status).
void serve_one(int socket, const Request& request, const CounterCopy& counters) {
  int out[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out) != 0) _exit(1);
  const pid_t server = getpid();
  const pid_t child = fork();
  if (child < 0) _exit(1);
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != server) _exit(1);
    close(out[0]);
    close(socket);
    std::memset(counters.own.begin, 0, counters.own.size);  // only this read's coverage
    data::ByteWriter w;
    run_read(w, request);
    if (!write_all(out[1], w.bytes().data(), w.bytes().size())) _exit(1);
    std::memcpy(counters.shared, counters.own.begin, counters.own.size);
    _exit(kForkAnswered);  // no atexit handlers, no leak check of HDF5's state
  }
  close(out[1]);
  std::vector<std::byte> answer_bytes;
  std::byte buffer[1 << 16];
  bool hung = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kForkSeconds);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd pfd{out[0], POLLIN, 0};
    const int ready = left.count() > 0 ? ::poll(&pfd, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      hung = true;
      break;
    }
    const ssize_t n = read_fd(out[0], buffer, sizeof buffer);
    if (n <= 0) break;  // the answer is whole, or the fork died
    answer_bytes.insert(answer_bytes.end(), buffer, buffer + n);
  }
  close(out[0]);
  if (hung) kill(child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  data::ByteWriter reply;
  if (hung) {
    reply.put(Outcome::hung);
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == kForkAnswered) {
    reply.put(Outcome::answered);
    reply.put_array(answer_bytes);
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == kForkHdf5Crashed) {
    reply.put(Outcome::hdf5_crashed);
  } else {
    reply.put(Outcome::failed);
    reply.put<std::int32_t>(WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status));
  }
  if (!send_message(socket, reply.bytes())) _exit(1);
}

constexpr std::uint64_t kPurgeEvery = 64;  // requests

[[noreturn]] void serve(int socket, const CounterCopy& counters) {
  // A sanitizer's report in a read's fork ends it with the report's exit status, which the fuzzer
  // hears of and ends on with the input. The fork's death callback only tells HDF5's deaths apart;
  // backtrace() is called once here so that it has loaded its unwinder before a dying sanitizer
  // needs it. The handlers are the server's, inherited by each read's fork.
  void* warm_up[1];
  backtrace(warm_up, 1);
  __sanitizer_set_death_callback(on_fork_death);
  __asan_set_error_report_callback(on_fork_report);
  struct sigaction fault = {};
  fault.sa_sigaction = on_fork_fault;
  fault.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &fault, &sanitizer_sigsegv);
  sigaction(SIGBUS, &fault, &sanitizer_sigbus);
  std::vector<std::byte> message;
  for (std::uint64_t served = 1; receive_message(socket, message); ++served) {
    data::ByteReader in(message, "a request to the second pass's server");
    Request r;
    r.op = in.get<Op>();
    r.path = in.get_string();
    r.options = in.get<ReadOptions>();
    r.rows = in.get_array<int64_t>(in.get<std::uint64_t>());
    r.begin = in.get<int64_t>();
    r.count = in.get<int64_t>();
    serve_one(socket, r, counters);
    // What the server frees waits in ASan's quarantine (256 MB by default), never reused: without
    // this the server grew from 9 MB to 108 MB in a campaign's hour, and each read's fork copies
    // and tears down the page tables of all of it.
    if (served % kPurgeEvery == 0) __sanitizer_purge_allocator();
  }
  _exit(0);  // the fuzzer closed its end
}

// The fuzzer's end of the server's socket; -1 when it is not started.
int server_socket = -1;

void start_server() {
  const CounterCopy& counters = counter_copy();
  if (!counters.shared) {  // a read's coverage would be lost: the fuzzer would run blind
    std::fputs("fuzz_data_shard: no __sancov_cntrs section found in /proc/self/exe\n", stderr);
    std::abort();
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    std::perror("fuzz_data_shard: socketpair");
    std::abort();
  }
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0) {
    std::perror("fuzz_data_shard: fork of the second pass's server");
    std::abort();
  }
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // the fuzzer ending ends the server and its reads
    if (getppid() != parent) _exit(1);
    close(sv[0]);
    serve(sv[1], counters);
  }
  close(sv[1]);
  server_socket = sv[0];
}

// A contained end of a second-pass read (HDF5's memory error, or HDF5 looping): the input is done.
// Not a std::exception, so read_all's error checks let it through.
struct SecondPassContained {};

// One read of the second pass, run by the server.
template <typename Result>
Result served(Op op, const std::filesystem::path& path, const ReadOptions& o,
              const std::vector<int64_t>& rows = {}, int64_t begin = 0, int64_t count = 0) {
  data::ByteWriter request;
  request.put(op);
  request.put_string(path.string());
  request.put(o);
  request.put<std::uint64_t>(rows.size());
  request.put_array(rows);
  request.put(begin);
  request.put(count);
  std::vector<std::byte> reply;
  if (!send_message(server_socket, request.bytes()) || !receive_message(server_socket, reply)) {
    std::fputs("fuzz_data_shard: the second pass's server is gone\n", stderr);
    std::abort();  // no finding of the target, but nothing can be checked without it
  }
  data::ByteReader in(reply, "the second pass's read");
  switch (in.get<Outcome>()) {
    case Outcome::answered:
      break;
    case Outcome::hdf5_crashed:
      throw SecondPassContained{};  // HDF5's memory error
    case Outcome::hung:
      throw SecondPassContained{};  // HDF5 looping
    case Outcome::failed: {
      const int status = in.get<std::int32_t>();
      std::fprintf(stderr,
                   "fuzz_data_shard: a read of the second pass (a fork) ended with status %d: "
                   "a sanitizer's report or a signal (above)\n",
                   status);
      std::abort();
    }
  }
  // Its coverage, added to this process's.
  const CounterCopy& counters = counter_copy();
  for (std::size_t i = 0; i < counters.own.size; ++i) {
    const unsigned sum = counters.own.begin[i] + counters.shared[i];
    counters.own.begin[i] = static_cast<std::uint8_t>(sum > 255 ? 255 : sum);
  }
  const auto kind = in.get<std::uint8_t>();
  if (kind == 1) throw std::invalid_argument(in.get_string());
  if (kind == 2) throw std::runtime_error(in.get_string());
  Result result;
  get_result(in, result);
  return result;
}

struct ServedDirect {
  static auto inspect(const auto& p) { return served<data::ShardInfo>(Op::inspect, p, {}); }
  static auto lengths(const auto& p) { return served<std::vector<int32_t>>(Op::lengths, p, {}); }
  static auto shard(const auto& p, const auto& o) {
    return served<std::vector<Sample>>(Op::shard, p, o);
  }
  static auto packed(const auto& p, const auto& o) {
    return served<std::vector<data::PackedRow>>(Op::packed, p, o);
  }
  static auto rows(const auto& p, const auto& r, const auto& o) {
    return served<std::vector<Sample>>(Op::rows, p, o, r);
  }
  static auto range(const auto& p, int64_t b, int64_t n, const auto& o) {
    return served<std::vector<Sample>>(Op::range, p, o, {}, b, n);
  }
};

// Which of a read's results the two passes disagree on, or null.
const char* first_difference(const Reads& contained, const Reads& direct) {
  return !same_info(contained.info, direct.info)         ? "the shard's info"
         : !same(contained.lengths, direct.lengths)      ? "the lengths"
         : !same(contained.samples, direct.samples)      ? "the samples"
         : !same_packed(contained.packed, direct.packed) ? "the packed rows"
         : !same(contained.picked, direct.picked)        ? "the picked rows"
         : !same(contained.past_end, direct.past_end)    ? "the rows past the end"
                                                         : nullptr;
}

// Each side's rows in brief, for the report of a difference: it may not reproduce alone.
void describe_difference(const Reads& contained, const Reads& direct) {
  const auto brief = [](const char* side, const std::optional<std::vector<Sample>>& rows) {
    std::fprintf(stderr, "  %s:", side);
    if (!rows) std::fprintf(stderr, " no rows (an error)");
    for (std::size_t i = 0; rows && i < rows->size() && i < 8; ++i) {
      const Sample& x = (*rows)[i];
      std::fprintf(stderr, " [ids %zu seg %zu pos %zu mlm %zu nsp %d]", x.input_ids.size(),
                   x.segment_ids.size(), x.masked_lm_positions.size(), x.masked_lm_ids.size(),
                   static_cast<int>(x.next_sentence_label));
    }
    std::fprintf(stderr, "\n");
  };
  const Layout layout = contained.info ? contained.info->layout : Layout::kFixed;
  std::fprintf(stderr, "  layout %d, %lld rows\n", static_cast<int>(layout),
               contained.info ? static_cast<long long>(contained.info->rows) : -1LL);
  brief("reader, picked", contained.picked);
  brief("direct, picked", direct.picked);
  brief("reader, shard", contained.samples);
  brief("direct, shard", direct.samples);
}

}  // namespace

// Does the shard at `path` read differently in the two passes when it is the only input of a
// fresh run of this target (a new reader process, a new second pass)? Each read of both passes
// starts from a process that has read nothing (the reader's design, and the second pass's server),
// yet the heap such a process inherits holds its server's history (when the second pass forked
// from the fuzzer itself, thousands of inputs'), and HDF5 1.10 fills a corrupt shard's rows from
// memory the file does not define: campaigns found inputs whose two passes differ after thousands
// of others and agree alone. A difference the input shows alone is a finding; one it does not show
// alone came from the history of these processes and is tolerated.
// (A reader whose answers depended on its own history would be the defect the unit test "every
// read runs in a fork of the reader process ..." guards against.)
bool differs_alone(const std::filesystem::path& path) {
  if (std::getenv("MLBERT_FUZZ_SHARD_ALONE")) return true;  // this is the run alone
  const auto dir = mlbert::fuzz::scratch_dir();
  const auto alone = dir / "alone.hdf5";
  std::error_code ec;
  std::filesystem::copy_file(path, alone, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) return true;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string prefix = "-artifact_prefix=" + (dir / "alone-").string();
  const pid_t child = fork();
  if (child < 0) return true;
  if (child == 0) {
    setenv("MLBERT_FUZZ_SHARD_ALONE", "1", 1);
    const int quiet = open("/dev/null", O_WRONLY);
    if (quiet >= 0) dup2(quiet, STDERR_FILENO), dup2(quiet, STDOUT_FILENO);
    execl(exe.c_str(), exe.c_str(), "-runs=1", prefix.c_str(), alone.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // A hang inside HDF5 ends as a contained error well before libFuzzer's own -timeout. Reading a
  // seed-sized shard takes milliseconds; each input that hangs HDF5 costs the whole limit, spent
  // spinning in the reader (CI's rate: 12 executions a second with 3 s, 21 with 1 s). A read cut
  // short on a busy machine only skips that input's second pass.
  setenv("MLBERT_SHARD_READ_TIMEOUT", "0.25", 0);
  const auto reader =
      std::filesystem::read_symlink("/proc/self/exe").parent_path() / "mlbert-shard-reader-fuzz";
  setenv("MLBERT_SHARD_READER", reader.c_str(), 0);
  // These options reach only the reader processes (this process's sanitizer has read its own).
  // Their reports go to /dev/null unless MLBERT_SHARD_READER_LOG names a file, so they are not
  // symbolized then: each crash of the reader would otherwise start llvm-symbolizer.
  std::string asan = kAsanOptions;
  const char* log = std::getenv("MLBERT_SHARD_READER_LOG");
  if (!log || !*log) asan += ":symbolize=0";
  if (const char* given = std::getenv("ASAN_OPTIONS"); given && *given)
    asan += std::string(":") + given;
  setenv("ASAN_OPTIONS", asan.c_str(), 1);
  start_server();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const auto path = mlbert::fuzz::scratch_dir() / "shard.hdf5";
  mlbert::fuzz::write_file(path, bytes, size);
  ReadOptions o;
  o.vocab_size = kVocabSize;
  const Reads contained = read_all<Contained>(path, o);
  check_promises(contained, o);
  if (contained.hdf5_failed) return 0;  // the library would crash or hang this process too
  Reads direct;
  try {
    direct = read_all<ServedDirect>(path, o);
  } catch (const SecondPassContained&) {
    return 0;  // HDF5's memory error or loop, contained in production by the reader process
  }
  if (direct.hdf5_failed) {  // only the reader process reports these
    std::fputs("fuzz_data_shard: the second pass: HDF5 failed where the reader did not\n", stderr);
    std::abort();
  }
  const char* differs = first_difference(contained, direct);
  if (!differs) return 0;
  std::fprintf(stderr, "fuzz_data_shard: the reader process and the direct pass differ in %s\n",
               differs);
  describe_difference(contained, direct);
  if (!differs_alone(path)) {
    std::fputs("fuzz_data_shard: tolerated: alone, in a fresh process, the input reads alike\n",
               stderr);
    return 0;
  }
  std::fputs("fuzz_data_shard: the direct pass's reads differ from the reader's, alone too\n",
             stderr);
  std::abort();
}
