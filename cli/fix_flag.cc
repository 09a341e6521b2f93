#include "cli/fix_flag.h"

#include <exception>

namespace trident {

Status ParseFix(const std::vector<std::string>& fix, SearchConstraints* c) {
  for (const std::string& item : fix) {
    size_t eq = item.find('=');
    std::string key = item.substr(0, eq);
    int value = 0;
    try {
      value = eq == std::string::npos ? 0 : std::stoi(item.substr(eq + 1));
    } catch (const std::exception&) {
      value = 0;
    }
    if (value < 1) return InvalidArgument("--fix " + item + ": expected key=positive integer");
    if (key == "tp")
      c->tp = value;
    else if (key == "pp")
      c->pp = value;
    else if (key == "dp")
      c->dp = value;
    else if (key == "cp")
      c->cp = value;
    else if (key == "mb" || key == "micro_batch")
      c->micro_batch = value;
    else if (key == "dp_shard" && value < 2)
      return InvalidArgument("--fix " + item +
                             ": a shard group holds at least 2 replicas (none shards nothing)");
    else if (key == "dp_shard")
      c->dp_shard = value;
    else
      return InvalidArgument("--fix " + item + ": unknown key '" + key +
                             "'; use tp, pp, dp, cp, mb or dp_shard");
  }
  return Status::Ok();
}

}  // namespace trident
