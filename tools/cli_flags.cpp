#include "tools/cli_flags.h"

#include <fmt/format.h>

namespace qdqrt::tools {

CLI::Validator quiet(CLI::Validator validator) { return validator.description(""); }

CLI::Validator shapes_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        auto parsed = parse_shapes(value);
        return parsed.ok() ? "" : parsed.status().message();
      },
      "NAME:DxDx..[,...]");
}

CLI::Validator load_inputs_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        auto specs = parse_load_inputs(value);
        if (!specs.ok()) return specs.status().message();
        for (const InputFileSpec& spec : *specs) {
          std::string problem = CLI::ExistingFile(spec.path);
          if (!problem.empty()) return fmt::format("input '{}': {}", spec.name, problem);
        }
        return "";
      },
      "NAME:FILE.npy[,...]");
}

Result<std::map<std::string, Shape>> collect_shapes(const std::vector<std::string>& texts) {
  std::map<std::string, Shape> shapes;
  for (const std::string& text : texts) {
    QDQRT_ASSIGN_OR_RETURN(auto parsed, parse_shapes(text));
    for (const auto& [name, shape] : parsed) {
      if (!shapes.emplace(name, shape).second) return invalid_argument("input '{}' is given twice", name);
    }
  }
  return shapes;
}

Result<std::vector<InputFileSpec>> collect_load_inputs(const std::vector<std::string>& texts) {
  std::vector<InputFileSpec> specs;
  for (const std::string& text : texts) {
    QDQRT_ASSIGN_OR_RETURN(auto parsed, parse_load_inputs(text));
    specs.insert(specs.end(), parsed.begin(), parsed.end());
  }
  return specs;
}

}  // namespace qdqrt::tools
