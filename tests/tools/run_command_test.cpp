#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tools/npy.h"
#include "tools/run_command.h"

namespace qdqrt::tools {
namespace {

namespace fs = std::filesystem;

TEST(ParseLoadInputs, SplitsNamesAndFiles) {
  auto specs = parse_load_inputs("x:a.npy, y:dir/b.npy");
  ASSERT_TRUE(specs.ok()) << specs.status().to_string();
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[0].name, "x");
  EXPECT_EQ((*specs)[0].path, "a.npy");
  EXPECT_EQ((*specs)[1].name, "y");
  EXPECT_EQ((*specs)[1].path, "dir/b.npy");
}

TEST(ParseLoadInputs, QuotedNamesMayHoldColonsAndCommas) {
  auto specs = parse_load_inputs("'in:0':a.npy,'a,b':c:d.npy");
  ASSERT_TRUE(specs.ok()) << specs.status().to_string();
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[0].name, "in:0");
  EXPECT_EQ((*specs)[0].path, "a.npy");
  EXPECT_EQ((*specs)[1].name, "a,b");
  EXPECT_EQ((*specs)[1].path, "c:d.npy");  // the first ':' after the name separates
}

TEST(ParseLoadInputs, RejectsBadSyntax) {
  for (const char* text : {"x", "x.npy", ":a.npy", "x:", "x:a.npy,,y:b.npy", "x:a.npy,", "'x:a.npy", "'x'a.npy", ""}) {
    auto specs = parse_load_inputs(text);
    EXPECT_FALSE(specs.ok()) << text;
    if (!specs.ok()) {
      EXPECT_EQ(specs.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST(ParseShapes, ParsesDimsAndNamesWithColons) {
  auto shapes = parse_shapes("x:1x3x224x224,in:0:8x10,s:");
  ASSERT_TRUE(shapes.ok()) << shapes.status().to_string();
  EXPECT_EQ(shapes->at("x"), (Shape{1, 3, 224, 224}));
  EXPECT_EQ(shapes->at("in:0"), (Shape{8, 10}));
  EXPECT_EQ(shapes->at("s"), Shape{});
}

TEST(ParseShapes, RejectsBadDims) {
  for (const char* text : {"x", "x:1x", "x:ax3", "x:-1x3", "x:1,5", "x:1.5", ":1x2", "x:1,x:2", "x:99999999999999"}) {
    auto shapes = parse_shapes(text);
    EXPECT_FALSE(shapes.ok()) << text;
  }
}

// A dim of 2^40 is a number, just too large: say so (it once said "is not a non-negative integer").
TEST(ParseShapes, TooLargeDimsSaySo) {
  auto shapes = parse_shapes("x:1099511627776x3");
  ASSERT_FALSE(shapes.ok());
  EXPECT_NE(shapes.status().message().find("dim 1099511627776 is too large (at most 1099511627775)"),
            std::string::npos)
      << shapes.status().message();
  auto huge = parse_shapes("x:123456789012345678901234567890");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("is too large"), std::string::npos) << huge.status().message();
  EXPECT_TRUE(parse_shapes("x:1099511627775").ok());
}

ValueInfo value_info(const std::string& name, DataType dtype, std::vector<Dim> dims) {
  ValueInfo info;
  info.name = name;
  info.dtype = dtype;
  info.shape = std::move(dims);
  return info;
}

Dim static_dim(int64_t value) { return Dim{value, ""}; }
Dim symbolic_dim(const std::string& symbol) { return Dim{-1, symbol}; }

TEST(ResolveInputShape, SymbolicDimsDefaultToOne) {
  ValueInfo info = value_info("x", DataType::kFloat, {symbolic_dim("batch"), static_dim(3), symbolic_dim("")});
  auto shape = resolve_input_shape(info, std::nullopt);
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(*shape, (Shape{1, 3, 1}));
  shape = resolve_input_shape(info, Shape{4, 3, 7});
  ASSERT_TRUE(shape.ok()) << shape.status().to_string();
  EXPECT_EQ(*shape, (Shape{4, 3, 7}));
}

TEST(ResolveInputShape, RejectsContradictionsWithTheModel) {
  ValueInfo info = value_info("x", DataType::kFloat, {symbolic_dim("batch"), static_dim(3)});
  auto rank = resolve_input_shape(info, Shape{1, 3, 1});
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.status().message().find("rank 2"), std::string::npos) << rank.status().message();
  auto dim = resolve_input_shape(info, Shape{2, 4});
  ASSERT_FALSE(dim.ok());
  EXPECT_NE(dim.status().message().find("static dim 1 = 3"), std::string::npos) << dim.status().message();
  ValueInfo unknown_rank;
  unknown_rank.name = "u";
  unknown_rank.dtype = DataType::kFloat;
  auto missing = resolve_input_shape(unknown_rank, std::nullopt);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--shapes=u:"), std::string::npos) << missing.status().message();
  auto given = resolve_input_shape(unknown_rank, Shape{5});
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(*given, Shape{5});
}

// Batch 0, refused by exec, is refused by run too: from --shapes and from a file.
TEST(ResolveInputShape, BatchZeroIsRefused) {
  ValueInfo info = value_info("x", DataType::kFloat, {symbolic_dim("batch"), static_dim(3)});
  auto shape = resolve_input_shape(info, Shape{0, 3});
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("the batch size must be at least 1, got 0"), std::string::npos)
      << shape.status().message();
  Status file = check_input_tensor(info, Tensor(DataType::kFloat, {0, 3}), std::nullopt);
  EXPECT_NE(file.message().find("the batch size must be at least 1"), std::string::npos) << file.message();
}

TEST(CheckInputTensor, ChecksDtypeRankAndStaticDims) {
  ValueInfo info = value_info("x", DataType::kFloat, {symbolic_dim("batch"), static_dim(3)});
  EXPECT_TRUE(check_input_tensor(info, Tensor(DataType::kFloat, {5, 3}), std::nullopt).is_ok());
  Status dtype = check_input_tensor(info, Tensor(DataType::kDouble, {5, 3}), std::nullopt);
  EXPECT_NE(dtype.message().find("dtype float32 in the model, the file holds float64"), std::string::npos)
      << dtype.message();
  Status rank = check_input_tensor(info, Tensor(DataType::kFloat, {3}), std::nullopt);
  EXPECT_NE(rank.message().find("rank 2"), std::string::npos) << rank.message();
  Status dim = check_input_tensor(info, Tensor(DataType::kFloat, {5, 4}), std::nullopt);
  EXPECT_NE(dim.message().find("dim 1 differs"), std::string::npos) << dim.message();
  Status requested = check_input_tensor(info, Tensor(DataType::kFloat, {5, 3}), Shape{4, 3});
  EXPECT_NE(requested.message().find("--shapes says [4, 3]"), std::string::npos) << requested.message();
}

TEST(RandomTensor, IsSeededAndInRange) {
  std::mt19937_64 rng_a(7), rng_b(7), rng_c(8);
  auto a = random_tensor(DataType::kFloat, {1000}, rng_a);
  auto b = random_tensor(DataType::kFloat, {1000}, rng_b);
  auto c = random_tensor(DataType::kFloat, {1000}, rng_c);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  bool all_equal = true, any_differs = false;
  float min = 1, max = -1;
  for (int64_t i = 0; i < 1000; ++i) {
    float value = a->data<float>()[i];
    all_equal &= value == b->data<float>()[i];
    any_differs |= value != c->data<float>()[i];
    min = std::min(min, value);
    max = std::max(max, value);
  }
  EXPECT_TRUE(all_equal);
  EXPECT_TRUE(any_differs);
  EXPECT_GE(min, -1.0f);
  EXPECT_LT(max, 1.0f);
  EXPECT_LT(min, -0.9f);  // the whole range is used
  EXPECT_GT(max, 0.9f);
}

TEST(RandomTensor, IntegersAreSmallAndFloat16IsInRange) {
  std::mt19937_64 rng(0);
  for (DataType dtype : {DataType::kInt8, DataType::kUint8, DataType::kInt32, DataType::kInt64, DataType::kUint64}) {
    auto tensor = random_tensor(dtype, {200}, rng);
    ASSERT_TRUE(tensor.ok());
    std::set<int64_t> seen;
    for (int64_t i = 0; i < 200; ++i) seen.insert(tensor->value_as_int64(i));
    EXPECT_EQ(seen, (std::set<int64_t>{0, 1, 2, 3})) << dtype_name(dtype);
  }
  auto half = random_tensor(DataType::kFloat16, {200}, rng);
  ASSERT_TRUE(half.ok());
  for (int64_t i = 0; i < 200; ++i) {
    uint16_t bits = half->data<uint16_t>()[i];
    EXPECT_LE(bits & 0x7FFF, 0x3C00) << i;  // |value| <= 1.0
  }
  auto flags = random_tensor(DataType::kBool, {64}, rng);
  ASSERT_TRUE(flags.ok());
  for (int64_t i = 0; i < 64; ++i) EXPECT_LE(static_cast<const uint8_t*>(flags->raw_data())[i], 1);
}

TEST(RandomTensor, RejectsHugeShapesWithoutAllocating) {
  std::mt19937_64 rng(0);
  auto huge = random_tensor(DataType::kFloat, {1 << 20, 1 << 20, 1 << 20}, rng);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("too large"), std::string::npos);
  EXPECT_FALSE(random_tensor(DataType::kString, {2}, rng).ok());
}

TEST(SummarizeTensor, PrintsStatsAndArgmaxPerRow) {
  Tensor logits = Tensor::from_vector<float>({2, 3}, {0.1f, 0.9f, 0.2f, 5.0f, -1.0f, 2.0f});
  std::string text = summarize_tensor("logits", logits);
  EXPECT_NE(text.find("logits: float32 [2, 3]"), std::string::npos) << text;
  EXPECT_NE(text.find("values: 0.1 0.9 0.2 5 -1 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("min -1  max 5  mean 1.2"), std::string::npos) << text;
  EXPECT_NE(text.find("argmax per row: [1, 0]"), std::string::npos) << text;

  Tensor many = Tensor::from_vector<int64_t>({10}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  text = summarize_tensor("ids", many);
  EXPECT_NE(text.find("values: 1 2 3 4 5 6 7 8 ... (10 total)"), std::string::npos) << text;
  EXPECT_EQ(text.find("argmax"), std::string::npos) << text;
  text = summarize_tensor("labels", Tensor::from_vector<int64_t>({2, 2}, {1, 2, 3, 4}));
  EXPECT_EQ(text.find("argmax"), std::string::npos) << text;  // only float [N, C] outputs

  Tensor with_nan = Tensor::from_vector<float>({3}, {1.0f, NAN, 3.0f});
  text = summarize_tensor("n", with_nan);
  EXPECT_NE(text.find("min 1  max 3  mean 2  (1 NaN)"), std::string::npos) << text;

  EXPECT_NE(summarize_tensor("e", Tensor(DataType::kFloat, {0, 4})).find("(empty)"), std::string::npos);
  Tensor half(DataType::kFloat16, {1});
  half.data<uint16_t>()[0] = 0xC100;  // -2.5
  EXPECT_NE(summarize_tensor("h", half).find("values: -2.5"), std::string::npos);
}

TEST(SanitizeFileName, ReplacesPathCharacters) {
  EXPECT_EQ(sanitize_file_name("logits"), "logits");
  EXPECT_EQ(sanitize_file_name("out/0:1 x"), "out_0_1_x");
  EXPECT_EQ(sanitize_file_name(".."), "output..");
  EXPECT_EQ(sanitize_file_name(""), "output");
}

// A graph with no nodes whose outputs are its inputs: exercises the whole command path
// (inputs, run, summary, saving) without needing any op kernel.
Graph passthrough_graph() {
  Graph graph;
  graph.name = "passthrough";
  graph.inputs = {"x", "ids"};
  graph.outputs = {"x", "ids"};
  graph.values["x"] = value_info("x", DataType::kFloat, {symbolic_dim("batch"), static_dim(3)});
  graph.values["ids"] = value_info("ids", DataType::kInt64, {static_dim(2)});
  return graph;
}

class RunCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / fmt::format("qdqrt_run_{}_{}", info->name(), getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(RunCommandTest, RandomInputsAreSeededPerInput) {
  Graph graph = passthrough_graph();
  RunOptions options;
  options.seed = 3;
  std::ostringstream log;
  auto first = prepare_inputs(graph, options, log);
  auto second = prepare_inputs(graph, options, log);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->at("x").shape(), (Shape{1, 3}));
  EXPECT_EQ(first->at("ids").shape(), (Shape{2}));
  EXPECT_EQ(first->at("x").data<float>()[0], second->at("x").data<float>()[0]);

  // Loading x from a file must not change the random values of ids.
  ASSERT_TRUE(write_npy(path("x.npy"), Tensor::from_vector<float>({4, 3}, std::vector<float>(12, 0.5f))).is_ok());
  options.input_files = {{"x", path("x.npy")}};
  auto loaded = prepare_inputs(graph, options, log);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->at("x").shape(), (Shape{4, 3}));
  EXPECT_EQ(loaded->at("ids").data<int64_t>()[0], first->at("ids").data<int64_t>()[0]);
  EXPECT_EQ(loaded->at("ids").data<int64_t>()[1], first->at("ids").data<int64_t>()[1]);

  options.input_files.clear();
  options.seed = 4;
  auto other_seed = prepare_inputs(graph, options, log);
  ASSERT_TRUE(other_seed.ok());
  EXPECT_NE(other_seed->at("x").data<float>()[0], first->at("x").data<float>()[0]);

  options.shapes = {{"x", Shape{6, 3}}};
  auto shaped = prepare_inputs(graph, options, log);
  ASSERT_TRUE(shaped.ok()) << shaped.status().to_string();
  EXPECT_EQ(shaped->at("x").shape(), (Shape{6, 3}));
}

TEST_F(RunCommandTest, InputErrorsNameTheFlagAndValue) {
  Graph graph = passthrough_graph();
  RunOptions options;
  std::ostringstream log;

  options.input_files = {{"y", path("y.npy")}};
  auto unknown = prepare_inputs(graph, options, log);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "--loadInputs: 'y' is not an input of the model (inputs: x, ids)");

  options.input_files = {{"x", path("missing.npy")}};
  auto missing = prepare_inputs(graph, options, log);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing.npy"), std::string::npos) << missing.status().message();

  ASSERT_TRUE(write_npy(path("x64.npy"), Tensor(DataType::kDouble, {1, 3})).is_ok());
  options.input_files = {{"x", path("x64.npy")}};
  auto dtype = prepare_inputs(graph, options, log);
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.status().message().find("x64.npy"), std::string::npos) << dtype.status().message();
  EXPECT_NE(dtype.status().message().find("float64"), std::string::npos) << dtype.status().message();

  ASSERT_TRUE(write_npy(path("x_bad.npy"), Tensor(DataType::kFloat, {1, 4})).is_ok());
  options.input_files = {{"x", path("x_bad.npy")}};
  auto shape = prepare_inputs(graph, options, log);
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("dim 1 differs"), std::string::npos) << shape.status().message();

  options.input_files = {{"x", path("x64.npy")}, {"x", path("x64.npy")}};
  EXPECT_FALSE(prepare_inputs(graph, options, log).ok());

  options.input_files.clear();
  options.shapes = {{"nope", Shape{1}}};
  auto bad_shape_name = prepare_inputs(graph, options, log);
  ASSERT_FALSE(bad_shape_name.ok());
  EXPECT_NE(bad_shape_name.status().message().find("--shapes: 'nope'"), std::string::npos);
}

TEST_F(RunCommandTest, RunsPrintsAndSavesOutputs) {
  Graph graph = passthrough_graph();
  ASSERT_TRUE(write_npy(path("x.npy"), Tensor::from_vector<float>({2, 3}, {1, 2, 3, 6, 5, 4})).is_ok());
  RunOptions options;
  options.input_files = {{"x", path("x.npy")}};
  options.save_outputs_dir = path("out/nested");
  options.iterations = 3;
  options.verbose = true;
  std::ostringstream out;
  std::optional<RunError> error = run_loaded_graph(graph, options, out);
  ASSERT_FALSE(error) << error->status.to_string();
  std::string text = out.str();
  EXPECT_NE(text.find("x: float32 [2, 3]"), std::string::npos) << text;
  EXPECT_NE(text.find("argmax per row: [2, 0]"), std::string::npos) << text;
  EXPECT_NE(text.find("ids: int64 [2]"), std::string::npos) << text;
  EXPECT_NE(text.find("time (reference executor, 3 iterations): median"), std::string::npos) << text;
  EXPECT_NE(text.find("random (seed 0)"), std::string::npos) << text;

  auto saved = read_npy(path("out/nested/x.npy"));
  ASSERT_TRUE(saved.ok()) << saved.status().to_string();
  EXPECT_EQ(saved->shape(), (Shape{2, 3}));
  EXPECT_EQ(saved->data<float>()[3], 6.0f);
  EXPECT_TRUE(fs::exists(path("out/nested/ids.npy")));
}

TEST_F(RunCommandTest, UsageErrorsAreMarkedAsUsage) {
  Graph graph = passthrough_graph();
  RunOptions options;
  options.input_files = {{"nope", path("x.npy")}};
  std::ostringstream out;
  auto error = run_loaded_graph(graph, options, out);
  ASSERT_TRUE(error);
  EXPECT_TRUE(error->usage);

  // A save directory that is a file is a failure of the run, not of the flags' syntax.
  options.input_files.clear();
  { std::ofstream(path("file")) << "x"; }
  options.save_outputs_dir = path("file");
  error = run_loaded_graph(graph, options, out);
  ASSERT_TRUE(error);
  EXPECT_FALSE(error->usage);
  EXPECT_NE(error->status.message().find("--saveOutputs"), std::string::npos) << error->status.message();
}

TEST_F(RunCommandTest, MissingModelFileIsAFailureNamingTheFlag) {
  RunOptions options;
  options.onnx_path = path("missing.onnx");
  std::ostringstream out;
  auto error = run_model(options, out);
  ASSERT_TRUE(error);
  EXPECT_FALSE(error->usage);
  EXPECT_NE(error->status.message().find("--onnx: '"), std::string::npos) << error->status.message();
}

}  // namespace
}  // namespace qdqrt::tools
