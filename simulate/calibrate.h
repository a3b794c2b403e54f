// `mlbert simulate calibrate --results DIR`: an accelerator profile fitted to ONE published
// result, from the run's samples, evaluations and times (or to two, below).
//
// Design choice: one result fixes one operating point, so the calibration fits one number, the
// tensor rate of GEMM and attention kernels, so that the simulated runs, through the same
// simulator that predicts (mlbert's traced kernels, the run's launch line), last as long as the
// published ones. Everything else is stated physics: the memory rate is the datasheet HBM
// bandwidth times a stated fraction, the SM count is the datasheet's, the host's cost per kernel
// is the implementation's (simulator.h), and the run-start time is the first evaluation
// interval's excess over the next. What does not scale with the micro-batch (the gradient buffer's
// zeroing and f32 accumulation, the optimizer, the gradient passes, kernels too small to hide their
// issue) comes from those kernels, not from the fit.
#pragma once

#include <string>

#include "simulate/profile.h"
#include "simulate/results.h"
#include "simulate/simulator.h"

namespace mlbert::simulate {

struct CalibrationOptions {
  std::string command;  // the command line, recorded in the provenance
  SimulationOptions simulation;
};

// The fitted profile; its provenance records the source, the fit and every derived constant.
// Throws std::invalid_argument when the folder cannot calibrate (no datasheet for the accelerator,
// a non-GPU accelerator, fewer than 2 evaluations in every run of a 1.0.0-or-later ruleset, a
// fitted tensor rate above the datasheet peak).
AcceleratorProfile calibrate(const PublishedResult& result, const CalibrationOptions& options);

// `mlbert simulate calibrate --results DIR --second-results DIR2`: two results of one
// implementation (one accelerator, one round) at different samples per GPU and step fit two
// numbers, the tensor rate and a fixed cost per step (`fixed_step_seconds`: what a step costs
// whatever its batch beyond the traced kernels: the host's per-step work, synchronization), so
// that both results' simulated runs last as long as their published ones. One result cannot
// separate the two: its one rate carries the fixed cost spread over its samples, and under-counts
// it at smaller batches (BENCHMARKS.md, "fixed costs per step"). The profile's run start is the
// first result's. Throws std::invalid_argument as calibrate() does, and when the results are of
// different accelerators or rounds, ran differently as their logs read (CUDA graphs or eager
// issue, packing or padding, optimizer sharding, read-backs), are less than 1.25x apart in samples
// per GPU and step, or imply a negative fixed cost.
AcceleratorProfile calibrate(const PublishedResult& result, const PublishedResult& second,
                             const CalibrationOptions& options);

// `mlbert simulate calibrate --bench FILE`: a profile measured on one GPU by the device check's
// bert_cuda_bench --json (format "mlbert-device-bench/1": the device, its measured device-copy
// bandwidth and bf16 GEMM ceiling, and per dtype and length mix the micro-batch's shape and the
// timed forward+backward and optimizer). The memory rate is the measured copy bandwidth, the SMs
// the device's, the optimizer's time per parameter the measured one; the one fitted number is
// again the tensor rate, fitted so that mlbert's traced kernels (issued from C++, 3 us each) of the
// chosen measurement's micro-batch take its forward+backward time. Every other measurement in the
// file is then predicted and recorded in the provenance ("checks"). Nothing measures the run
// start: it is `run_start_seconds`, recorded as stated.
struct BenchCalibrationOptions {
  std::string command;
  std::string accelerator;  // the name the profile stands for ("" = the device's)
  std::string dtype = "bf16";
  std::string mix = "mix";
  double run_start_seconds = 0;
};

// Throws std::runtime_error naming the file and field for a malformed measurement, and
// std::invalid_argument when no tensor rate fits.
AcceleratorProfile measured_profile(const std::filesystem::path& bench_file,
                                    const BenchCalibrationOptions& options);

}  // namespace mlbert::simulate
