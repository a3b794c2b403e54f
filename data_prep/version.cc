// Placeholder translation unit so the library exists before its sources land.
namespace mlbert::data {
const char* library_name() { return "data_prep"; }
}  // namespace mlbert::data
