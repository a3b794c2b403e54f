// Placeholder translation unit so the library exists before its sources land.
namespace mlbert::logging {
const char* library_name() { return "mlperf_logging"; }
}  // namespace mlbert::logging
