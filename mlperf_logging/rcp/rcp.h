// The BERT RCP (reference convergence point) check, with the official rcp_checker's semantics:
// per-batch-size reference statistics, pruning, interpolation for a batch size without a reference,
// the one-sided t-test bisection for the minimum acceptable mean, and the verdict for a result
// directory. A submission passes when the olympic mean of its samples-to-converge is at least
// RCP mean / max speedup; converging faster than the RCP mean yields a score scaling factor.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mlbert::logging {

// Reference statistics at one batch size (a measured RCP or one interpolated between two).
struct RcpPoint {
  std::string name;  // "bert_ref_3072", or "bert_interp_768" for an interpolated point
  double batch_size = 0;
  double mean = 0;         // olympic mean of the reference runs' samples to converge
  double stdev = 0;        // population standard deviation of all reference runs
  double min_mean = 0;     // minimum acceptable submission mean (t-test bisection)
  double max_speedup = 0;  // mean / min_mean
  int runs = 0;            // reference runs (0 for an interpolated point)
  bool interpolated = false;
};

// Which reference set the lookup uses: the pruned one (the official default), all points, or the
// lower convex envelope the RCP specification asks for (mlcommons/logging#368: the official
// pruning does not re-examine a point's left neighbour after removing it, so it can keep points
// above the envelope). The envelope is for the advisory audit; the official verdict uses pruned.
enum class RcpPass { pruned, full, envelope };

// The reference runs at one batch size, as an RCP file lists them.
struct RcpReference {
  std::string name;
  double batch_size = 0;
  std::vector<double> samples_to_converge;
};

// Reads an RCP file in the official JSON layout ({"bert_ref_N": {"Benchmark", "BS",
// "Epochs to converge": [...]}, ...}); throws AuditError naming the file and record when malformed.
std::vector<RcpReference> read_rcp_json(const std::filesystem::path& file);

// BERT RCPs of one ruleset with their statistics, sorted by batch size.
class RcpCatalog {
 public:
  // The project's table for `ruleset` (see rcp_table.h).
  explicit RcpCatalog(std::string_view ruleset);
  // Any set of references, e.g. a custom RCP file; `label` names it in messages.
  RcpCatalog(std::string label, std::vector<RcpReference> references);

  const std::string& ruleset() const { return ruleset_; }
  const std::string& data_ruleset() const { return data_ruleset_; }
  const std::vector<RcpPoint>& points(RcpPass pass) const {
    return pass == RcpPass::pruned ? pruned_ : pass == RcpPass::envelope ? envelope_ : all_;
  }
  // The point measured at exactly `batch_size`, if the chosen set has one.
  std::optional<RcpPoint> find(double batch_size, RcpPass pass) const;
  // Nearest points below and above `batch_size` in the chosen set (exclusive).
  std::optional<RcpPoint> nearest_below(double batch_size, RcpPass pass) const;
  std::optional<RcpPoint> nearest_above(double batch_size, RcpPass pass) const;
  // Linear interpolation of mean and stdev between `low` and `high`, with its own bisection
  // (which, as officially, assumes 2 x 10 reference runs).
  RcpPoint interpolate(double batch_size, const RcpPoint& low, const RcpPoint& high) const;

  // The reference a submission at `batch_size` is judged against, as the official checker picks
  // it: the point measured there, else the interpolation between its neighbours, else (below every
  // point) the smallest point; none beyond the largest point or in an empty set.
  struct Match {
    enum class Kind { exact, interpolated, smallest, beyond_largest, none };
    Kind kind = Kind::none;
    std::optional<RcpPoint> point;  // for exact, interpolated and smallest
  };
  Match match(double batch_size, RcpPass pass) const;

 private:
  void compute(std::vector<RcpReference> references);

  std::string ruleset_;
  std::string data_ruleset_;
  std::vector<RcpPoint> all_;
  std::vector<RcpPoint> pruned_;
  std::vector<RcpPoint> envelope_;
};

// A batch size as the messages print it: an integer without ".0", anything else as Python prints
// the float.
std::string batch_size_text(double batch_size);

// Samples to converge of one result file, as the RCP checker reads it.
struct RcpRun {
  std::filesystem::path file;
  bool converged = false;          // run_stop with status "success"
  double samples_to_converge = 0;  // 1e9 when not converged (the official "infinite")
  std::optional<double> batch_size;
  std::optional<std::string> benchmark;
  std::string note;  // why it did not converge, or where its figure came from
  // "cannot read: <reason>" when the file could not be read at all (a folder or FIFO under a
  // result name, no permission): the run is dropped as not converged, as `score` drops it.
  std::string unreadable;
};

enum class RcpVerdict {
  pass,     // RCP found or interpolated (or a smaller batch size converging slower) and met
  fail,     // an RCP applies and the submission converges too fast
  missing,  // no RCP can judge this batch size: the submitter must provide one
  error,    // the logs do not say enough (batch size, convergence) to run the test
};
std::string_view to_string(RcpVerdict verdict);

struct RcpOptions {
  std::string ruleset;
  std::filesystem::path custom_rcps;  // an RCP JSON file to use instead of the ruleset's table
  RcpPass pass = RcpPass::pruned;
  bool bert_train_samples = false;  // samples from train_samples instead of eval epoch_num
  bool bypass = false;              // --rcp-bypass: RCP failures pass with a note
  bool write_scaling = false;       // write/remove scaling.json in the directory as officially
};

struct RcpResult {
  std::filesystem::path dir;
  bool passed = false;
  RcpVerdict verdict = RcpVerdict::error;
  std::string
      message;  // the official message: "RCP found", "RCP Interpolation", "Missing RCP, ..."
  std::vector<RcpRun> runs;
  std::optional<double> batch_size;
  std::optional<RcpPoint> reference;      // the point the submission was judged against
  std::optional<double> submission_mean;  // olympic mean of the runs' samples to converge
  double scaling_factor = 1.0;            // RCP mean / submission mean when faster, else 1
  bool bypassed = false;
  std::vector<std::string> problems;  // what made the logs unusable (file:line: field ...)
};

// Runs the BERT RCP check on the result_*.txt files of `dir`. Throws AuditError when `dir` is
// missing or has no result files; malformed records become `problems` and an error verdict.
RcpResult check_rcp_directory(const std::filesystem::path& dir, const RcpOptions& options);

// True when the official check_directory would stop with a Python exception on what `result`
// read (a KeyError, a JSONDecodeError, an OSError on a file it cannot open): any unreadable file
// or record, except that logs which all say
// "bert" and all lack a batch size get its verdict "Could not detect global_batch_size".
bool stops_official_rcp_checker(const RcpResult& result);

// Reads one result file the way the RCP checker does. Malformed records are appended to
// `problems` as "FILE:LINE: ..." and leave the run unconverged.
RcpRun read_rcp_run(const std::filesystem::path& file, bool bert_train_samples,
                    std::vector<std::string>& problems);

}  // namespace mlbert::logging
