// PipeDream graph.txt: the parser, the chain of antichain states, and the imported model and
// profile, on small hand-made graphs with known answers.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/model_spec.h"
#include "core/profile.h"
#include "models/layer_cost.h"
#include "models/pipedream_chain.h"
#include "models/pipedream_graph.h"
#include "models/pipedream_import.h"

namespace trident {
namespace {

// A node line with fwd, bwd, activation and parameter figures.
std::string Node(const std::string& id, const std::string& description, double fwd, double bwd,
                 const std::string& activation, double params) {
  return id + " -- " + description + " -- forward_compute_time=" + std::to_string(fwd) +
         ", backward_compute_time=" + std::to_string(bwd) + ", activation_size=" + activation +
         ", parameter_size=" + std::to_string(params) + "\n";
}

std::string Edge(const std::string& from, const std::string& to) {
  return "\t" + from + " -- " + to + "\n";
}

// input -> a -> b -> c, node lines out of order as in PipeDream's files.
std::string ChainText() {
  return Node("node3", "Conv2d(b)", 3, 30, "300.0", 3000) +
         Node("node1", "Input", 9, 9, "100.0", 0) +
         Node("node2", "Conv2d(a)", 2, 20, "200.0", 2000) +
         Node("node4", "Linear(c)", 4, 40, "400.0", 4000) + Edge("node1", "node2") +
         Edge("node2", "node3") + Edge("node3", "node4");
}

// input -> a; a -> b1 -> b2 -> add; a -> c -> add (a diamond with a longer left branch)
std::string DiamondText() {
  return Node("node1", "Input", 0, 0, "1.0", 0) + Node("node2", "Conv2d(a)", 1, 1, "10.0", 5) +
         Node("node5", "Conv2d(c)", 1, 1, "20.0", 5) +
         Node("node3", "Conv2d(b1)", 1, 1, "30.0", 5) +
         Node("node4", "Conv2d(b2)", 1, 1, "40.0", 5) + Node("node6", "Add", 0, 0, "50.0", 0) +
         Edge("node1", "node2") + Edge("node2", "node3") + Edge("node2", "node5") +
         Edge("node3", "node4") + Edge("node4", "node6") + Edge("node5", "node6");
}

std::vector<std::string> ChainIds(const PipeDreamGraph& graph, const PipeDreamChain& chain) {
  std::vector<std::string> ids;
  for (const ChainLayer& layer : chain.layers) ids.push_back(graph.nodes[layer.node].id);
  return ids;
}

TEST(PipeDreamGraphTest, ParsesNodesAndEdges) {
  StatusOr<PipeDreamGraph> graph = ParsePipeDreamGraph(ChainText(), "g.txt");
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  ASSERT_EQ(graph->nodes.size(), 4u);
  const PipeDreamNode& first = graph->nodes[0];
  EXPECT_EQ(first.id, "node3");
  EXPECT_EQ(first.description, "Conv2d(b)");
  EXPECT_EQ(first.fwd_ms, 3);
  EXPECT_EQ(first.bwd_ms, 30);
  EXPECT_EQ(first.activation_bytes, 300);
  EXPECT_EQ(first.param_bytes, 3000);
  EXPECT_EQ(first.line, 1);
  EXPECT_EQ(first.IdNumber(), 3);
  EXPECT_TRUE(graph->nodes[1].IsInput());
  ASSERT_EQ(graph->edges.size(), 3u);
  EXPECT_EQ(graph->edges[0].from, 1);
  EXPECT_EQ(graph->edges[0].to, 2);
  EXPECT_EQ(graph->edges[0].line, 5);
}

TEST(PipeDreamGraphTest, SumsAListOfActivationsAndIgnoresAStageId) {
  std::string text =
      "node7 -- LSTM(1024, 1024) -- forward_compute_time=1.5, "
      "backward_compute_time=2.5, activation_size=[100.0; 20.0; 3.0], "
      "parameter_size=8.0 -- stage_id=2\n";
  StatusOr<PipeDreamGraph> graph = ParsePipeDreamGraph(text, "g.txt");
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  EXPECT_EQ(graph->nodes[0].activation_bytes, 123);
}

TEST(PipeDreamGraphTest, ErrorsNameTheFileAndLine) {
  struct Case {
    std::string text;
    std::string expect;
  };
  const std::string good = Node("node1", "Input", 0, 0, "1.0", 0);
  const std::vector<Case> cases = {
      {good + "node2 -- Conv2d\n", "g.txt:2: expected a node line"},
      {good + Node("node2", "ReLU", -1, 0, "1.0", 0), "g.txt:2: forward_compute_time"},
      {good + "node2 -- ReLU -- forward_compute_time=1, backward_compute_time=1, "
              "activation_size=1x, parameter_size=0\n",
       "g.txt:2: activation_size '1x' is not a non-negative number"},
      {good + "node2 -- ReLU -- forward_compute_time=1, backward_compute_time=1\n",
       "g.txt:2: expected forward_compute_time="},
      {good + "node2 -- ReLU -- backward_compute_time=1, forward_compute_time=1, "
              "activation_size=1, parameter_size=0\n",
       "g.txt:2: expected forward_compute_time= as field 1"},
      {good + "node2 -- ReLU -- forward_compute_time=1, backward_compute_time=1, "
              "activation_size=1, parameter_size=0 -- stage=1\n",
       "g.txt:2: the 4th field may only be stage_id=K"},
      {good + good, "g.txt:2: node node1 is already defined on line 1"},
      {good + Edge("node1", "node9"), "g.txt:2: edge names node node9"},
      {good + "\tnode1 node2\n", "g.txt:2: expected an edge line"},
      {"\n\n", "g.txt: no node lines"},
  };
  for (const Case& c : cases) {
    StatusOr<PipeDreamGraph> graph = ParsePipeDreamGraph(c.text, "g.txt");
    ASSERT_FALSE(graph.ok()) << c.text;
    EXPECT_NE(graph.status().message().find(c.expect), std::string::npos)
        << graph.status().message() << "\nexpected: " << c.expect;
  }
}

TEST(PipeDreamChainTest, AChainKeepsItsOrderAndDropsTheInput) {
  StatusOr<PipeDreamGraph> graph = ParsePipeDreamGraph(ChainText(), "g.txt");
  ASSERT_TRUE(graph.ok());
  StatusOr<PipeDreamChain> chain = LinearizePipeDream(*graph, "g.txt");
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  EXPECT_EQ(ChainIds(*graph, *chain), (std::vector<std::string>{"node2", "node3", "node4"}));
  EXPECT_EQ(chain->dropped, std::vector<int>{1});
  // The Input's bytes are zeroed (PipeDream's rule); each cut carries one activation.
  EXPECT_EQ(chain->layers[0], (ChainLayer{2, 0, 200}));
  EXPECT_EQ(chain->layers[1], (ChainLayer{0, 200, 300}));
  EXPECT_EQ(chain->layers[2], (ChainLayer{3, 300, 400}));  // last: the model's output
}

TEST(PipeDreamChainTest, ADiamondRunsOneBranchThenTheOtherAndCountsEveryCrossingTensor) {
  StatusOr<PipeDreamGraph> graph = ParsePipeDreamGraph(DiamondText(), "g.txt");
  ASSERT_TRUE(graph.ok());
  StatusOr<PipeDreamChain> chain = LinearizePipeDream(*graph, "g.txt");
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  // By id number: a, b1, b2 (the left branch to its end), then c, then the add.
  EXPECT_EQ(ChainIds(*graph, *chain),
            (std::vector<std::string>{"node2", "node3", "node4", "node5", "node6"}));
  std::vector<int64_t> outputs;
  for (const ChainLayer& layer : chain->layers) outputs.push_back(layer.output_bytes);
  // After a: a (10, consumed by b1 and c). After b1: b1 30 + a 10 (c still needs it).
  // After b2: b2 40 + a 10. After c: b2 40 + c 20. After the add: its own 50.
  EXPECT_EQ(outputs, (std::vector<int64_t>{10, 40, 50, 60, 50}));
  EXPECT_EQ(chain->layers[3].input_bytes, 50);
}

TEST(PipeDreamChainTest, DropsGetitemSinksOnly) {
  std::string text = DiamondText() + Node("node7", "__getitem__(1)", 0, 0, "5.0", 0) +
                     Node("node8", "__getitem__(0)", 0, 0, "5.0", 0) + Edge("node6", "node7") +
                     Edge("node6", "node8") + Node("node9", "Linear", 1, 1, "2.0", 0) +
                     Edge("node8", "node9");
  StatusOr<PipeDreamGraph> graph = ParsePipeDreamGraph(text, "g.txt");
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  StatusOr<PipeDreamChain> chain = LinearizePipeDream(*graph, "g.txt");
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  EXPECT_EQ(ChainIds(*graph, *chain), (std::vector<std::string>{"node2", "node3", "node4", "node5",
                                                                "node6", "node8", "node9"}));
  // The add's output crosses the cut after it once, for node8 (node7 is gone).
  EXPECT_EQ(chain->layers[4].output_bytes, 50);
}

TEST(PipeDreamChainTest, ACycleNamesANodeOnIt) {
  std::string text = ChainText() + Edge("node4", "node3");
  StatusOr<PipeDreamGraph> graph = ParsePipeDreamGraph(text, "g.txt");
  ASSERT_TRUE(graph.ok());
  StatusOr<PipeDreamChain> chain = LinearizePipeDream(*graph, "g.txt");
  ASSERT_FALSE(chain.ok());
  const std::string& message = chain.status().message();
  EXPECT_TRUE(message.find("g.txt:1: node node3 lies on a cycle") != std::string::npos ||
              message.find("g.txt:4: node node4 lies on a cycle") != std::string::npos)
      << message;
}

TEST(PipeDreamChainTest, ASelfLoopIsACycle) {
  std::string text = ChainText() + Edge("node2", "node2");
  StatusOr<PipeDreamGraph> graph = ParsePipeDreamGraph(text, "g.txt");
  ASSERT_TRUE(graph.ok());
  StatusOr<PipeDreamChain> chain = LinearizePipeDream(*graph, "g.txt");
  ASSERT_FALSE(chain.ok());
  EXPECT_NE(chain.status().message().find("g.txt:3: node node2 lies on a cycle"), std::string::npos)
      << chain.status().message();
}

TEST(PipeDreamChainTest, RefusesAGraphWithoutInputOrWithAFedInput) {
  std::string no_input = Node("node2", "Conv2d(a)", 1, 1, "1.0", 0);
  StatusOr<PipeDreamGraph> graph = ParsePipeDreamGraph(no_input, "g.txt");
  ASSERT_TRUE(graph.ok());
  StatusOr<PipeDreamChain> chain = LinearizePipeDream(*graph, "g.txt");
  ASSERT_FALSE(chain.ok());
  EXPECT_NE(chain.status().message().find("g.txt: no Input node"), std::string::npos);

  graph = ParsePipeDreamGraph(ChainText() + Edge("node4", "node1"), "g.txt");
  ASSERT_TRUE(graph.ok());
  chain = LinearizePipeDream(*graph, "g.txt");
  ASSERT_FALSE(chain.ok());
  EXPECT_NE(chain.status().message().find("g.txt:8: edge into Input node node1"), std::string::npos)
      << chain.status().message();

  graph = ParsePipeDreamGraph(Node("node1", "Input", 0, 0, "1.0", 0), "g.txt");
  ASSERT_TRUE(graph.ok());
  chain = LinearizePipeDream(*graph, "g.txt");
  ASSERT_FALSE(chain.ok());
  EXPECT_NE(chain.status().message().find("no layer is left"), std::string::npos);
}

TEST(PipeDreamImportTest, WritesAGenericModelAndItsProfile) {
  PipeDreamImportOptions options{"tiny", 32, "trident test", "2026-01-01T00:00:00Z"};
  StatusOr<ImportedModel> imported = ImportPipeDream(DiamondText(), "g.txt", options);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  const ModelSpec& model = imported->model;
  EXPECT_TRUE(model.Validate().ok());
  EXPECT_TRUE(model.IsGeneric());
  EXPECT_EQ(model.NumLayers(), 5);
  EXPECT_EQ(model.max_seq_len, 1);
  const Profile& profile = imported->profile;
  EXPECT_TRUE(profile.Validate().ok()) << profile.Validate().ToString();
  EXPECT_EQ(profile.model, "tiny");
  EXPECT_EQ(profile.num_layers, 5);
  EXPECT_EQ(profile.seq_len, 1);
  EXPECT_EQ(profile.method.source, ProfileSource::kImported);
  EXPECT_EQ(profile.Find(0, 32, 2, false, 1), nullptr);  // tp 1 only
  const ProfileEntry* b1 = profile.Find(1, 32, 1, false, 1);
  ASSERT_NE(b1, nullptr);
  EXPECT_EQ(b1->fwd_ms, 1);
  EXPECT_EQ(b1->bwd_input_ms, 1);
  EXPECT_EQ(b1->bwd_weight_ms, 0);
  EXPECT_EQ(b1->param_bytes, 5);
  EXPECT_EQ(b1->grad_bytes, 5);
  EXPECT_EQ(b1->optimizer_bytes, 10);
  EXPECT_EQ(b1->output_bytes, 40);
  EXPECT_EQ(b1->stashed_none_bytes, 30);
  EXPECT_EQ(b1->stashed_selective_bytes, 30);
  EXPECT_EQ(b1->stashed_full_bytes, 10);
  EXPECT_EQ(b1->recompute_full_ms, 1);
  EXPECT_EQ(imported->layer_table.substr(0, 22), "0\tnode2\tConv2d(a)\n1\tno");
}

TEST(PipeDreamImportTest, TheFilesRoundTrip) {
  PipeDreamImportOptions options{"tiny", 32, "trident test", "2026-01-01T00:00:00Z"};
  StatusOr<ImportedModel> imported = ImportPipeDream(ChainText(), "g.txt", options);
  ASSERT_TRUE(imported.ok());
  StatusOr<ModelSpec> model = ParseModelSpec(ModelSpecToYaml(imported->model), "model.yaml");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ(*model, imported->model);
  StatusOr<Profile> profile = ParseProfile(ProfileToYaml(imported->profile), "profile.yaml");
  ASSERT_TRUE(profile.ok()) << profile.status().ToString();
  EXPECT_EQ(*profile, imported->profile);
}

TEST(PipeDreamImportTest, RefusesABadMicroBatchOrName) {
  StatusOr<ImportedModel> imported = ImportPipeDream(ChainText(), "g.txt", {"tiny", 0, "", ""});
  ASSERT_FALSE(imported.ok());
  EXPECT_NE(imported.status().message().find("--micro-batch 0"), std::string::npos);
  imported = ImportPipeDream(ChainText(), "g.txt", {"", 8, "", ""});
  ASSERT_FALSE(imported.ok());
}

TEST(GenericLayerTest, AnalyticCostsAreZero) {
  ModelSpec model;
  model.name = "g";
  model.max_seq_len = 1;
  model.layers = {{LayerKind::kGeneric, 3}};
  ASSERT_TRUE(model.Validate().ok());
  LayerCost cost = AnalyticLayerCost(model, LayerKind::kGeneric, LayerShape{});
  EXPECT_EQ(cost, LayerCost{});
}

}  // namespace
}  // namespace trident
