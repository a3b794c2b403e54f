// Fields of a submission's system.json (see system_fields.h).
#include "simulate/system_fields.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "simulate/profile.h"

namespace mlbert::simulate {

int positive_count(const nlohmann::json& system, const char* field,
                   const std::filesystem::path& file) {
  const std::string text = system.contains(field) && system[field].is_string()
                               ? system[field].get<std::string>()
                           : system.contains(field) ? system[field].dump()
                                                    : "";
  try {  // a whole number, also written as a decimal ("1.0")
    std::size_t used = 0;
    const double n = std::stod(text, &used);
    if (used == text.size() && n >= 1 && n <= std::numeric_limits<int>::max() &&
        n == std::floor(n) && text.find_first_of("eEnNxX") == std::string::npos)
      return static_cast<int>(n);
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(file.string() + ": " + field + ": \"" + text +
                              "\" is not a positive whole number");
}

std::string string_field(const nlohmann::json& system, const char* field) {
  return system.contains(field) && system[field].is_string() ? system[field].get<std::string>()
                                                             : "";
}

std::optional<std::string> unmodelled_accelerator(const std::string& accelerator,
                                                  const std::filesystem::path& system_file) {
  if (!looks_like_gpu(accelerator))
    return system_file.string() + ": accelerator \"" + accelerator +
           "\" is not a GPU: mlbert simulate models GPU clusters only";
  if (is_pcie_card(accelerator))
    return system_file.string() + ": accelerator \"" + accelerator +
           "\" is a PCIe card: its GPUs talk over PCIe (or in pairs over an NVLink bridge), which "
           "mlbert simulate's network model (NVLink/NVSwitch inside a node, NICs between) does not "
           "describe";
  return std::nullopt;
}

}  // namespace mlbert::simulate
