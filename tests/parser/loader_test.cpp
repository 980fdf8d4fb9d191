// Well-formed models: structure, shapes, initializers, names, attributes, newer opsets.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>

#include "parser/onnx_loader.h"
#include "tests/parser/test_models.h"

namespace qdqrt::testing {
namespace {

TEST(OnnxLoader, LoadsInputsOutputsInitializersAndShapes) {
  auto graph = load_text(kAddReluModel);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  EXPECT_EQ(graph->opset(), 13);
  EXPECT_EQ(graph->inputs, std::vector<std::string>{"X"});  // B is an initializer, not a runtime input
  EXPECT_EQ(graph->outputs, std::vector<std::string>{"Y"});
  ASSERT_EQ(graph->nodes.size(), 2u);
  EXPECT_EQ(graph->nodes[0].op_type, "Add");
  EXPECT_EQ(graph->nodes[0].opset, 13);
  EXPECT_EQ(graph->nodes[0].inputs, (std::vector<std::string>{"X", "B"}));
  const Tensor* bias = graph->find_initializer("B");
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->shape(), (Shape{3}));
  EXPECT_FLOAT_EQ(bias->data<float>()[2], 3.0f);

  // T has no declared type: shape inference found it, keeping the symbolic batch dim.
  const ValueInfo* t = graph->find_value("T");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dtype, DataType::kFloat);
  ASSERT_TRUE(t->shape.has_value());
  ASSERT_EQ(t->shape->size(), 2u);
  EXPECT_FALSE((*t->shape)[0].is_static());
  EXPECT_EQ((*t->shape)[0].symbol, "N");
  EXPECT_EQ((*t->shape)[1].value, 3);
  EXPECT_EQ(dims_to_string(*graph->find_value("Y")->shape), "[N, 3]");
  EXPECT_EQ(graph->find_value("B")->static_shape(), (Shape{3}));
}

TEST(OnnxLoader, ShapeInferenceFillsUnknownDimsFromOtherInputs) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[N, 4] X, float[4, 5] W) => (float[N, 5] Y)
{
  Y = MatMul(X, W)
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  EXPECT_EQ(dims_to_string(*graph->find_value("Y")->shape), "[N, 5]");
}

TEST(OnnxLoader, PropagatesShapeValuesIntoReshape) {
  // torch-style flatten: Reshape(X, Concat(Shape(X)[0], -1)).
  auto model_text = [](const std::string& batch) {
    return "<ir_version: 8, opset_import: [\"\" : 13]>\nagraph (float[" + batch + ", 4, 5] X) => (float[" + batch +
           R"(, 20] Y)
{
  S = Shape(X)
  I = Constant <value = int64[1] {0}> ()
  B = Gather <axis = 0> (S, I)
  M = Constant <value = int64[1] {-1}> ()
  T = Concat <axis = 0> (B, M)
  R = Reshape(X, T)
  Y = Relu(R)
}
)";
  };
  std::string fixed_batch = model_text("2");
  auto graph = load_text(fixed_batch, fuzz_options());
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  // libonnx's Reshape rule sees T's values only through data propagation (Shape, Gather, Concat).
  const ValueInfo* r = graph->find_value("R");
  ASSERT_TRUE(r != nullptr && r->shape.has_value());
  EXPECT_EQ(dims_to_string(*r->shape), "[2, 20]");

  // A symbolic batch cannot become a constant: R stays without a shape, and nothing fails.
  graph = load_text(model_text("BATCH"), fuzz_options());
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  EXPECT_EQ(dims_to_string(*graph->find_value("Y")->shape), "[BATCH, 20]");
}

TEST(OnnxLoader, PropagatedScalarShapeValueStaysAScalar) {
  // torch's arange(x.shape[2]): a scalar Gather of a static shape feeds Range, which takes scalars
  // only; the propagated value must not become a one-element 1-D constant.
  auto graph = load_text(R"(<ir_version: 8, opset_import: ["" : 13]>
agraph (float[2, 3, 5] X) => (int64[5] Y)
{
  S = Shape(X)
  I = Constant <value = int64 {2}> ()
  N = Gather <axis = 0> (S, I)
  C = Cast <to = 7> (N)
  Z = Constant <value = int64 {0}> ()
  O = Constant <value = int64 {1}> ()
  Y = Range(Z, C, O)
}
)",
                         fuzz_options());
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  EXPECT_EQ(dims_to_string(*graph->find_value("Y")->shape), "[5]");
}

TEST(OnnxLoader, SortsNodesListedOutOfOrder) {
  onnx::ModelProto model = parse_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[2] X) => (float[2] Z)
{
  A = Relu(X)
  B = Relu(A)
  Z = Add(A, B)
}
)");
  // Reverse the file's node order.
  auto* nodes = model.mutable_graph()->mutable_node();
  std::reverse(nodes->begin(), nodes->end());
  auto graph = load_model(model);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  ASSERT_EQ(graph->nodes.size(), 3u);
  EXPECT_EQ(graph->nodes[0].outputs[0], "A");
  EXPECT_EQ(graph->nodes[1].outputs[0], "B");
  EXPECT_EQ(graph->nodes[2].outputs[0], "Z");
  EXPECT_EQ(dims_to_string(*graph->find_value("B")->shape), "[2]");
}

TEST(OnnxLoader, NamesUnnamedNodesAndMakesDuplicateNamesUnique) {
  onnx::ModelProto model = parse_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[2] X) => (float[2] D)
{
  A = Relu(X)
  B = Relu(A)
  C = Relu(B)
  D = Relu(C)
}
)");
  auto* graph_proto = model.mutable_graph();
  graph_proto->mutable_node(1)->set_name("dup");
  graph_proto->mutable_node(2)->set_name("dup");
  graph_proto->mutable_node(3)->set_name("Relu_0");  // the name node 0 would be generated
  auto graph = load_model(model);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  std::set<std::string> names;
  for (const Node& node : graph->nodes) names.insert(node.name);
  EXPECT_EQ(names.size(), 4u);
  EXPECT_EQ(graph->nodes[1].name, "dup");
  EXPECT_EQ(graph->nodes[2].name, "dup_1");
  EXPECT_EQ(graph->nodes[3].name, "Relu_0");
  EXPECT_EQ(graph->nodes[0].name, "Relu_0_1");
}

TEST(OnnxLoader, ConvertsRawAndTypedAttributes) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[1, 1, 4, 4] X, float[1, 1, 3, 3] W) => (float[1, 1, 2, 2] Y, float[1, 1, 2, 2] Z)
{
  C = Conv <kernel_shape = [3, 3], strides = [1, 1], auto_pad = "NOTSET"> (X, W)
  Y = LeakyRelu <alpha = 0.5> (C)
  K = Constant <value = int64[2] {3, 4}> ()
  Z = Identity(C)
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  const Node& conv = graph->nodes[0];
  ASSERT_NE(conv.find_attribute("kernel_shape"), nullptr);
  EXPECT_EQ(conv.find_attribute("kernel_shape")->kind, Attribute::Kind::kInts);
  EXPECT_EQ(conv.find_attribute("kernel_shape")->ints, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(conv.find_attribute("auto_pad")->s, "NOTSET");
  EXPECT_EQ(conv.typed_attributes, nullptr);  // its schema has no parser
  EXPECT_EQ(dims_to_string(*graph->find_value("C")->shape), "[1, 1, 2, 2]");

  const Node* leaky = nullptr;
  const Node* constant = nullptr;
  for (const Node& node : graph->nodes) {
    if (node.op_type == "LeakyRelu") leaky = &node;
    if (node.op_type == "Constant") constant = &node;
  }
  ASSERT_NE(leaky, nullptr);
  EXPECT_EQ(leaky->find_attribute("alpha")->kind, Attribute::Kind::kFloat);
  EXPECT_FLOAT_EQ(leaky->attrs<LeakyReluTestAttributes>().alpha, 0.5f);
  ASSERT_NE(constant, nullptr);  // Constant stays a node; its value is a tensor attribute
  const Tensor& value = constant->find_attribute("value")->t;
  EXPECT_EQ(value.dtype(), DataType::kInt64);
  EXPECT_EQ(value.to_int64_vector(), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(graph->find_value("K")->static_shape(), (Shape{2}));
}

TEST(OnnxLoader, TypedAttributeErrorsNameTheNode) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[2] X) => (float[2] Y)
{
  Y = LeakyRelu <alpha = -1.0> (X)
}
)");
  EXPECT_LOAD_ERROR(graph, "LeakyRelu", "alpha", "must be >= 0");
}

TEST(OnnxLoader, LoadsOpset21QuantizeLinearWithBlockSizeAndOutputDtype) {
  // libonnx 1.12 rejects block_size/output_dtype (its newest QuantizeLinear is opset 13).
  auto graph = load_text(R"(
<ir_version: 10, opset_import: ["" : 21]>
agraph (float[N, 4] X, float[N, 2] S) => (float[N, 4] Y)
{
  Q = QuantizeLinear <axis = 1, block_size = 2, output_dtype = 3> (X, S)
  Y = DequantizeLinear <axis = 1, block_size = 2> (Q, S)
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  const ValueInfo* q = graph->find_value("Q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, DataType::kInt8);  // from output_dtype, not the old rule's uint8
  EXPECT_EQ(dims_to_string(*q->shape), "[N, 4]");
  EXPECT_EQ(graph->nodes[0].find_attribute("block_size")->i, 2);
}

TEST(OnnxLoader, LoadsOpset18ReduceWithAxesInputWithoutGuessingItsShape) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 18]>
agraph (float[2, 3, 4] X, int64[1] axes = {1}) => (float[2, 1, 4] Y)
{
  R = ReduceMean <keepdims = 1> (X, axes)
  Y = Relu(R)
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  // The opset 13 rule would reduce every axis; the node is skipped, R stays untyped.
  const ValueInfo* r = graph->find_value("R");
  EXPECT_TRUE(r == nullptr || !r->shape.has_value());
  EXPECT_EQ(dims_to_string(*graph->find_value("Y")->shape), "[2, 1, 4]");
}

TEST(OnnxLoader, NewerOpsStillGetCheckedForShapeConflictsDownstream) {
  // Add is unchanged since opset 14, so it is checked strictly even in an opset 19 model.
  auto graph = load_text(R"(
<ir_version: 9, opset_import: ["" : 19]>
agraph (float[2, 3] A, float[4, 5] B) => (float[2, 3] Y)
{
  Y = Add(A, B)
}
)");
  EXPECT_LOAD_ERROR(graph, "Add", "shape inference failed");
}

TEST(OnnxLoader, RunsWithoutCheckerAndInference) {
  LoadOptions options = test_options();
  options.run_checker = false;
  options.run_shape_inference = false;
  auto graph = load_text(kAddReluModel, options);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  EXPECT_EQ(graph->find_value("T"), nullptr);  // nothing inferred
  EXPECT_NE(graph->find_value("Y"), nullptr);  // declared
}

TEST(OnnxLoader, AcceptsCustomDomainFromRegistry) {
  auto graph = load_text(R"(
<ir_version: 8, opset_import: ["" : 13, "com.example" : 1]>
agraph (float[2] X) => (float[2] Y)
{
  Y = com.example.Fused(X)
}
)");
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  EXPECT_EQ(graph->nodes[0].domain, "com.example");
  EXPECT_EQ(graph->nodes[0].opset, 1);
  EXPECT_EQ(graph->opset("com.example"), 1);
}

// Y = X + W with W (float[4]) stored as external data at `location`.
onnx::ModelProto external_data_model(const std::string& location) {
  onnx::ModelProto model = parse_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
agraph (float[4] X) => (float[4] Y)
{
  Y = Add(X, W)
}
)");
  auto* weight = model.mutable_graph()->add_initializer();
  weight->set_name("W");
  weight->set_data_type(onnx::TensorProto::FLOAT);
  weight->add_dims(4);
  weight->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = weight->add_external_data();
  entry->set_key("location");
  entry->set_value(location);
  return model;
}

TEST(OnnxLoader, LoadsFromFileWithExternalData) {
  TempDir dir;
  onnx::ModelProto model = external_data_model("weights/w.bin");
  auto* weight = model.mutable_graph()->mutable_initializer(0);
  auto add_entry = [&](const std::string& key, const std::string& value) {
    auto* entry = weight->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  add_entry("offset", "8");
  add_entry("length", "16");
  std::vector<float> values = {0.5f, -1.0f, 2.0f, 4.0f};
  std::string bytes(8, 'x');
  bytes.append(reinterpret_cast<const char*>(values.data()), 16);
  dir.write("weights/w.bin", bytes);
  dir.write("model.onnx", serialize(model));

  auto graph = load_onnx_file((dir.path() / "model.onnx").string(), test_options());
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  const Tensor* w = graph->find_initializer("W");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(std::vector<float>(w->values<float>().begin(), w->values<float>().end()), values);

  // The same model from bytes knows no directory.
  EXPECT_LOAD_ERROR(load_model(model), "W", "external data", "no model directory");

  dir.write("weights/w.bin", bytes.substr(0, 20));
  EXPECT_LOAD_ERROR(load_onnx_file((dir.path() / "model.onnx").string(), test_options()), "W", "too short");

  std::filesystem::remove(dir.path() / "weights/w.bin");
  EXPECT_LOAD_ERROR(load_onnx_file((dir.path() / "model.onnx").string(), test_options()), "W", "missing", "w.bin");

  weight->mutable_external_data(0)->set_value("../w.bin");
  dir.write("model.onnx", serialize(model));
  EXPECT_LOAD_ERROR(load_onnx_file((dir.path() / "model.onnx").string(), test_options()), "W", "'..'");

  weight->mutable_external_data(0)->set_value("/etc/passwd");
  dir.write("model.onnx", serialize(model));
  EXPECT_LOAD_ERROR(load_onnx_file((dir.path() / "model.onnx").string(), test_options()), "W", "relative");
}

// external_data_model(location) written to dir/model/model.onnx; returns its path.
std::string write_external_data_model(const TempDir& dir, const std::string& location) {
  std::filesystem::create_directories(dir.path() / "model");
  dir.write("model/model.onnx", serialize(external_data_model(location)));
  return (dir.path() / "model/model.onnx").string();
}

// The text of the location stays inside the directory, but a symlink takes it out: refused, as
// ONNX Runtime refuses it ("External data path escapes model directory").
TEST(OnnxLoader, ExternalDataThroughASymlinkOutOfTheModelDirectoryIsRefused) {
  TempDir dir;
  dir.write("outside.bin", std::string(16, '\x01'));
  const std::string model_path = write_external_data_model(dir, "w.bin");
  std::filesystem::create_symlink(dir.path() / "outside.bin", dir.path() / "model/w.bin");
  EXPECT_LOAD_ERROR(load_onnx_file(model_path, test_options()), "W", "outside the model directory", "w.bin");

  // A symlinked folder on the way is resolved the same way.
  const std::string folder_model = write_external_data_model(dir, "linked/outside.bin");
  std::filesystem::create_directory_symlink(dir.path(), dir.path() / "model/linked");
  EXPECT_LOAD_ERROR(load_onnx_file(folder_model, test_options()), "W", "outside the model directory");

  // /etc/passwd (or any file outside) never becomes a weight.
  const std::string etc_model = write_external_data_model(dir, "etc_link");
  std::filesystem::create_symlink("/etc/passwd", dir.path() / "model/etc_link");
  EXPECT_LOAD_ERROR(load_onnx_file(etc_model, test_options()), "W", "outside the model directory");
}

TEST(OnnxLoader, ExternalDataThroughASymlinkInsideTheModelDirectoryLoads) {
  TempDir dir;
  std::vector<float> values = {1.0f, 2.0f, 3.0f, 4.0f};
  const std::string model_path = write_external_data_model(dir, "w.bin");
  dir.write("model/data/real.bin", std::string(reinterpret_cast<const char*>(values.data()), 16));
  std::filesystem::create_symlink("data/real.bin", dir.path() / "model/w.bin");
  auto graph = load_onnx_file(model_path, test_options());
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  EXPECT_EQ(graph->find_initializer("W")->values<float>()[3], 4.0f);
}

// A FIFO or a device as the model or its external data is refused at once (reading one would
// block, or never end).
TEST(OnnxLoader, SpecialFilesAreRefusedWithoutReading) {
  TempDir dir;
  const std::filesystem::path fifo = dir.path() / "model.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_LOAD_ERROR(load_onnx_file(fifo.string(), test_options()), "model.fifo", "FIFO, not a regular file");
  EXPECT_LOAD_ERROR(load_onnx_file("/dev/zero", test_options()), "/dev/zero", "not a regular file");

  const std::string model_path = write_external_data_model(dir, "w.fifo");
  ASSERT_EQ(::mkfifo((dir.path() / "model/w.fifo").c_str(), 0600), 0);
  EXPECT_LOAD_ERROR(load_onnx_file(model_path, test_options()), "W", "FIFO, not a regular file");
}

// What the reference executor refuses at run time about Q/DQ parameter shapes is refused at load,
// so `run`, `inspect`, `exec` and the builder agree (the builder once took zero-point [3] against a
// scalar scale and ran with the first element).
TEST(OnnxLoader, QuantizationParameterShapesAreCheckedAtLoad) {
  LoadOptions options;  // the real op registry (typed Q/DQ attributes)
  EXPECT_LOAD_ERROR(load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,3,4,4] x) => (float[1,3,4,4] y)
<float s = {0.1}, int8[3] zp = {1, 2, 3}>
{
  q = QuantizeLinear(x, s, zp)
  y = DequantizeLinear(q, s, zp)
})", options), "QuantizeLinear", "zero-point shape [3] differs from scale shape []");

  EXPECT_LOAD_ERROR(load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,3,4,4] x) => (float[1,4,4,4] y)
<int8[4,3,3,3] w = {0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0}, float[3] ws = {0.1, 0.2, 0.3}>
{
  wd = DequantizeLinear <axis = 0> (w, ws)
  y = Conv <pads = [1, 1, 1, 1]> (x, wd)
})", options), "DequantizeLinear", "per-axis scale must have shape [4]", "got [3]");

  EXPECT_LOAD_ERROR(load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,3,4,4] x) => (float[1,3,4,4] y)
<float[3] s = {0.1, 0.2, 0.3}>
{
  q = QuantizeLinear <axis = 4> (x, s)
  y = DequantizeLinear <axis = 1> (q, s)
})", options), "QuantizeLinear", "axis");

  // Per-axis along a symbolic dim: left to run time. Matching shapes load.
  auto loaded = load_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N,3,4,4] x) => (float[N,3,4,4] y)
<float[3] s = {0.1, 0.2, 0.3}, uint8[3] zp = {1, 2, 3}>
{
  q = QuantizeLinear <axis = 1> (x, s, zp)
  y = DequantizeLinear <axis = 1> (q, s, zp)
})", options);
  EXPECT_TRUE(loaded.ok()) << loaded.status().to_string();
}

TEST(OnnxLoader, MissingFileIsAnIoError) {
  auto graph = load_onnx_file("/nonexistent/model.onnx", test_options());
  EXPECT_LOAD_ERROR(graph, "/nonexistent/model.onnx");
  EXPECT_EQ(graph.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace qdqrt::testing
