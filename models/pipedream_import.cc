#include "models/pipedream_import.h"

#include <cmath>

#include "core/limits.h"
#include "models/pipedream_chain.h"
#include "models/pipedream_graph.h"

namespace trident {
namespace {

Status CheckOptions(const PipeDreamImportOptions& o) {
  if (o.model_name.empty()) return InvalidArgument("the imported model needs a name");
  if (o.micro_batch < 1 || o.micro_batch > limits::kMaxMicroBatch) {
    return InvalidArgument("--micro-batch " + std::to_string(o.micro_batch) +
                           ": give the minibatch size PipeDream profiled at, 1 to " +
                           std::to_string(limits::kMaxMicroBatch));
  }
  return Status::Ok();
}

ProfileEntry Entry(const PipeDreamNode& node, const ChainLayer& layer, int micro_batch) {
  ProfileEntry e;
  e.micro_batch = micro_batch;
  e.tp = 1;
  e.fwd_ms = node.fwd_ms;
  e.bwd_input_ms = node.bwd_ms;
  e.recompute_full_ms = node.fwd_ms;
  e.param_bytes = std::llround(node.param_bytes);
  e.grad_bytes = e.param_bytes;
  e.optimizer_bytes = 2 * e.param_bytes;
  e.output_bytes = layer.output_bytes;
  e.stashed_none_bytes = std::llround(node.activation_bytes);
  e.stashed_selective_bytes = e.stashed_none_bytes;
  e.stashed_full_bytes = layer.input_bytes;
  return e;
}

Profile ProfileHeader(const ModelSpec& model, const PipeDreamImportOptions& o) {
  Profile p;
  p.model = model.name;
  p.num_layers = model.NumLayers();
  p.seq_len = model.max_seq_len;
  p.dtype = DType::kFp32;
  p.device_kind = DeviceKind::kGpu;
  p.device =
      "GPU not recorded (PipeDream profile, minibatch " + std::to_string(o.micro_batch) + ")";
  p.threads = 1;
  p.build = o.build;
  p.date = o.date;
  p.method = {ProfileSource::kImported, 0, 0};
  return p;
}

// A node's figures, once more against the per-layer byte limit (the chain checked the sizes
// it sums, not every parameter or activation size).
Status CheckNodeBytes(const PipeDreamNode& node, const std::string& file) {
  const double limit = static_cast<double>(limits::kMaxLayerBytes);
  if (2 * node.param_bytes <= limit && node.activation_bytes <= limit) return Status::Ok();
  return InvalidArgument(file + ":" + std::to_string(node.line) + ": node " + node.id +
                         " gives more bytes than Trident's limit for one layer, " +
                         std::to_string(limits::kMaxLayerBytes) + " (core/README.md, Limits)");
}

}  // namespace

StatusOr<ImportedModel> ImportPipeDream(std::string_view text, const std::string& file,
                                        const PipeDreamImportOptions& options) {
  TRIDENT_RETURN_IF_ERROR(CheckOptions(options));
  TRIDENT_ASSIGN_OR_RETURN(PipeDreamGraph graph, ParsePipeDreamGraph(text, file));
  TRIDENT_ASSIGN_OR_RETURN(PipeDreamChain chain, LinearizePipeDream(graph, file));
  ImportedModel out;
  out.model.name = options.model_name;
  out.model.max_seq_len = 1;
  out.model.dtype = DType::kFp32;
  out.model.layers = {{LayerKind::kGeneric, static_cast<int>(chain.layers.size())}};
  TRIDENT_RETURN_IF_ERROR(out.model.Validate().WithPrefix(file));
  out.profile = ProfileHeader(out.model, options);
  for (size_t i = 0; i < chain.layers.size(); ++i) {
    const PipeDreamNode& node = graph.nodes[chain.layers[i].node];
    TRIDENT_RETURN_IF_ERROR(CheckNodeBytes(node, file));
    LayerProfile layer{static_cast<int>(i), 1, LayerKind::kGeneric, {}};
    layer.entries.push_back(Entry(node, chain.layers[i], options.micro_batch));
    out.profile.layers.push_back(std::move(layer));
    out.layer_table += std::to_string(i) + "\t" + node.id + "\t" + node.description + "\n";
  }
  TRIDENT_RETURN_IF_ERROR(out.profile.Validate().WithPrefix(file));
  return out;
}

}  // namespace trident
