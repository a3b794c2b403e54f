// Placeholder translation unit so the library exists before its sources land.
namespace mlbert::bert {
const char* library_name() { return "bert"; }
}  // namespace mlbert::bert
