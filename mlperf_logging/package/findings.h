// What the package check records as it walks a package (package.h's PackageFinding), shared by its
// steps (package.cc, power.cc). Design choice: a finding names its file or folder relative to the
// package root, so the report reads the same wherever the package sits.
#pragma once
#include <filesystem>
#include <string>
#include <utility>

#include "mlperf_logging/package/package.h"

namespace mlbert::logging {

class PackageFindings {
 public:
  PackageFindings(PackageResult& result, std::filesystem::path root)
      : result_(result), root_(std::move(root)) {}
  void error(const std::filesystem::path& where, std::string text) {
    add(PackageFinding::Level::error, where, std::move(text));
  }
  void warning(const std::filesystem::path& where, std::string text) {
    add(PackageFinding::Level::warning, where, std::move(text));
  }
  void info(const std::filesystem::path& where, std::string text) {
    add(PackageFinding::Level::info, where, std::move(text));
  }
  // The first reason the official checker would stop with an exception here.
  void official_stop(const std::filesystem::path& where, const std::string& why) {
    if (result_.official_stop.empty())
      result_.official_stop = relative(where).string() + ": " + why;
  }
  std::filesystem::path relative(const std::filesystem::path& where) const {
    std::error_code ec;
    std::filesystem::path rel = std::filesystem::relative(where, root_, ec);
    return ec || rel.empty() ? where : rel;
  }

 private:
  void add(PackageFinding::Level level, const std::filesystem::path& where, std::string text) {
    const bool layout = text.starts_with("[layout] ");
    result_.findings.push_back({level, relative(where), std::move(text), layout});
  }
  PackageResult& result_;
  std::filesystem::path root_;
};

}  // namespace mlbert::logging
