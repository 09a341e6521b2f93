#include "cli/format.h"

#include <iostream>

namespace trident {

std::string JsonText(const nlohmann::json& value) {
  return value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

int PrintError(const Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  return 1;
}

}  // namespace trident
