#include "models/pipedream_graph.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

namespace trident {
namespace {

constexpr std::string_view kSeparator = " -- ";
constexpr const char* kMetadataKeys[] = {"forward_compute_time", "backward_compute_time",
                                         "activation_size", "parameter_size"};

std::vector<std::string_view> Split(std::string_view text, std::string_view separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t at = text.find(separator); at != std::string_view::npos;
       at = text.find(separator, start)) {
    parts.push_back(text.substr(start, at - start));
    start = at + separator.size();
  }
  parts.push_back(text.substr(start));
  return parts;
}

// Where a message about line `line` of `file` starts.
std::string At(const std::string& file, int line) { return file + ":" + std::to_string(line); }

// A finite, non-negative number making up all of `text`.
bool ParseFigure(std::string_view text, double* value) {
  std::string copy(text);
  if (copy.empty() || std::isspace(static_cast<unsigned char>(copy.front()))) return false;
  char* end = nullptr;
  *value = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size() && std::isfinite(*value) && *value >= 0;
}

// "[a; b; c]" as a + b + c, or a single figure.
bool ParseActivation(std::string_view text, double* value) {
  if (text.empty() || text.front() != '[') return ParseFigure(text, value);
  if (text.back() != ']') return false;
  *value = 0;
  for (std::string_view part : Split(text.substr(1, text.size() - 2), "; ")) {
    double figure = 0;
    if (!ParseFigure(part, &figure)) return false;
    *value += figure;
  }
  return true;
}

Status ParseMetadata(std::string_view text, const std::string& where, PipeDreamNode* node) {
  std::vector<std::string_view> pairs = Split(text, ", ");
  double* values[] = {&node->fwd_ms, &node->bwd_ms, &node->activation_bytes, &node->param_bytes};
  if (pairs.size() != 4) {
    return InvalidArgument(where + ": expected forward_compute_time=, backward_compute_time=, " +
                           "activation_size= and parameter_size=, separated by ', '");
  }
  for (size_t i = 0; i < 4; ++i) {
    std::string key = std::string(kMetadataKeys[i]) + "=";
    if (pairs[i].substr(0, key.size()) != key) {
      return InvalidArgument(where + ": expected " + key + " as field " + std::to_string(i + 1) +
                             " of the costs, got '" + std::string(pairs[i]) + "'");
    }
    std::string_view value = pairs[i].substr(key.size());
    bool ok = i == 2 ? ParseActivation(value, values[i]) : ParseFigure(value, values[i]);
    if (!ok) {
      return InvalidArgument(where + ": " + std::string(kMetadataKeys[i]) + " '" +
                             std::string(value) + "' is not a non-negative number");
    }
  }
  return Status::Ok();
}

StatusOr<PipeDreamNode> ParseNode(std::string_view line, const std::string& where) {
  std::vector<std::string_view> fields = Split(line, kSeparator);
  if (fields.size() < 3 || fields.size() > 4 || fields[0].empty()) {
    return InvalidArgument(where +
                           ": expected a node line 'ID -- DESCRIPTION -- COSTS' or an edge line "
                           "'<TAB>FROM -- TO'");
  }
  if (fields.size() == 4 && fields[3].substr(0, 9) != "stage_id=") {
    return InvalidArgument(where + ": the 4th field may only be stage_id=K, got '" +
                           std::string(fields[3]) + "'");
  }
  PipeDreamNode node;
  node.id = std::string(fields[0]);
  node.description = std::string(fields[1]);
  TRIDENT_RETURN_IF_ERROR(ParseMetadata(fields[2], where, &node));
  return node;
}

struct PendingEdge {
  std::string from;
  std::string to;
  int line = 0;
};

Status ResolveEdges(const std::vector<PendingEdge>& pending, const std::string& file,
                    PipeDreamGraph* graph) {
  std::map<std::string, int> index;
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    const PipeDreamNode& node = graph->nodes[i];
    auto [it, added] = index.emplace(node.id, static_cast<int>(i));
    if (!added) {
      return InvalidArgument(At(file, node.line) + ": node " + node.id + " is already defined on " +
                             "line " + std::to_string(graph->nodes[it->second].line));
    }
  }
  for (const PendingEdge& edge : pending) {
    for (const std::string& id : {edge.from, edge.to}) {
      if (index.count(id) == 0) {
        return InvalidArgument(At(file, edge.line) + ": edge names node " + id +
                               ", which no node line defines");
      }
    }
    graph->edges.push_back({index[edge.from], index[edge.to], edge.line});
  }
  return Status::Ok();
}

}  // namespace

bool PipeDreamNode::IsInput() const { return description.rfind("Input", 0) == 0; }

long long PipeDreamNode::IdNumber() const {
  size_t digits = id.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(id[digits - 1]))) --digits;
  if (digits == id.size() || id.size() - digits > 15) return -1;
  return std::stoll(id.substr(digits));
}

StatusOr<PipeDreamGraph> ParsePipeDreamGraph(std::string_view text, const std::string& file) {
  PipeDreamGraph graph;
  std::vector<PendingEdge> pending;
  int number = 0;
  for (std::string_view line : Split(text, "\n")) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::string where = At(file, number);
    if (line.front() != '\t') {
      TRIDENT_ASSIGN_OR_RETURN(PipeDreamNode node, ParseNode(line, where));
      node.line = number;
      graph.nodes.push_back(std::move(node));
      continue;
    }
    std::vector<std::string_view> ends = Split(line.substr(1), kSeparator);
    if (ends.size() != 2 || ends[0].empty() || ends[1].empty()) {
      return InvalidArgument(where + ": expected an edge line '<TAB>FROM -- TO'");
    }
    pending.push_back({std::string(ends[0]), std::string(ends[1]), number});
  }
  if (graph.nodes.empty()) {
    return InvalidArgument(file + ": no node lines; expected a PipeDream graph.txt profile");
  }
  TRIDENT_RETURN_IF_ERROR(ResolveEdges(pending, file, &graph));
  return graph;
}

}  // namespace trident
