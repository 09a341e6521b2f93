// JSON forms of evaluations and search results for --json output.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "planner/report.h"
#include "planner/search.h"

namespace trident {

nlohmann::json EvaluationJson(const Plan& plan, const Evaluation& evaluation,
                              const ReportContext& context);
nlohmann::json SearchJson(const SearchResult& result, const ReportContext& context,
                          const std::string& plan_path);

}  // namespace trident
