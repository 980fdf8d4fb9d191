// The HTTP request parser and response encoder on the KServe v2 spec's own examples, Triton's
// binary tensor data extension, and malformed bodies (each a 400 with a message, never a throw).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <variant>
#include <nlohmann/json.hpp>

#include "server/http_codec.h"
#include "server/model_config.h"

namespace qdqrt::server {
namespace {

InferRequest parse_ok(const std::string& body, std::optional<std::string> header_length = std::nullopt) {
  auto parsed = parse_http_infer_request(body, header_length);
  if (auto* error = std::get_if<ServeError>(&parsed)) ADD_FAILURE() << error->message;
  return std::holds_alternative<InferRequest>(parsed) ? std::get<InferRequest>(parsed) : InferRequest{};
}

std::string parse_error(const std::string& body, std::optional<std::string> header_length = std::nullopt) {
  auto parsed = parse_http_infer_request(body, header_length);
  if (!std::holds_alternative<ServeError>(parsed)) return "(accepted)";
  EXPECT_EQ(std::get<ServeError>(parsed).kind, ErrorKind::kBadRequest);
  return std::get<ServeError>(parsed).message;
}

// The inference request example of the KServe v2 REST protocol, verbatim.
TEST(HttpCodec, ChecksTheSpecsInferenceRequestExample) {
  std::string error = parse_error(R"({
    "id" : "42",
    "inputs" : [
      {
        "name" : "input0",
        "shape" : [ 2, 2 ],
        "datatype" : "UINT32",
        "data" : [ 1, 2, 3, 4 ]
      },
      {
        "name" : "input1",
        "shape" : [ 3 ],
        "datatype" : "BOOL",
        "data" : [ true ]
      }
    ],
    "outputs" : [
      {
        "name" : "output0"
      }
    ]
  })");
  // The example's input1 has 1 value for shape [3]: a server must refuse it, and says why.
  EXPECT_NE(error.find("'data' holds 1 values where the shape needs 3"), std::string::npos) << error;
}

TEST(HttpCodec, ParsesFlatAndNestedDataRowMajor) {
  InferRequest request = parse_ok(R"({
    "id" : "42",
    "inputs" : [
      {"name" : "input0", "shape" : [ 2, 2 ], "datatype" : "UINT32", "data" : [ 1, 2, 3, 4 ]},
      {"name" : "input1", "shape" : [ 2, 2 ], "datatype" : "FP32", "data" : [[1.5, 2.5], [3.5, 4.5]]}
    ],
    "outputs" : [ {"name" : "output0"} ]
  })");
  ASSERT_EQ(request.inputs.size(), 2u);
  EXPECT_EQ(request.id, "42");
  EXPECT_EQ(request.inputs[0].dtype, DataType::kUint32);
  EXPECT_EQ(request.inputs[0].shape, (Shape{2, 2}));
  uint32_t values[4];
  std::memcpy(values, request.inputs[0].data.data(), sizeof(values));
  EXPECT_EQ(values[3], 4u);
  float floats[4];
  ASSERT_EQ(request.inputs[1].data.size(), sizeof(floats));
  std::memcpy(floats, request.inputs[1].data.data(), sizeof(floats));
  EXPECT_EQ(floats[2], 3.5f);
  ASSERT_EQ(request.outputs.size(), 1u);
  EXPECT_EQ(request.outputs[0].name, "output0");
}

// The response example of the spec, produced by the encoder.
TEST(HttpCodec, EncodesTheSpecsResponseShape) {
  InferResponse response;
  response.model_name = "mymodel";
  response.model_version = "1";
  response.id = "42";
  InferTensor output;
  output.name = "output0";
  output.dtype = DataType::kFloat;
  output.shape = {3, 2};
  std::vector<float> values = {1.0f, 1.1f, 2.0f, 2.1f, 3.0f, 3.1f};
  output.data.resize(values.size() * sizeof(float));
  std::memcpy(output.data.data(), values.data(), output.data.size());
  response.outputs = {output};
  response.output_binary = {false};
  auto encoded = encode_http_infer_response(response);
  ASSERT_TRUE(std::holds_alternative<HttpBody>(encoded));
  HttpBody& body = std::get<HttpBody>(encoded);
  EXPECT_EQ(body.content_type, "application/json");
  EXPECT_FALSE(body.header_length);
  nlohmann::json json = nlohmann::json::parse(body.content);
  EXPECT_EQ(json["model_name"], "mymodel");
  EXPECT_EQ(json["id"], "42");
  EXPECT_EQ(json["outputs"][0]["name"], "output0");
  EXPECT_EQ(json["outputs"][0]["datatype"], "FP32");
  EXPECT_EQ(json["outputs"][0]["shape"], nlohmann::json::parse("[3, 2]"));
  // Each value reads back as the same float, bit for bit.
  for (size_t index = 0; index < values.size(); ++index) {
    EXPECT_EQ(json["outputs"][0]["data"][index].get<float>(), values[index]);
  }
}

TEST(HttpCodec, BinaryTensorDataBothWays) {
  std::string header = R"({"inputs":[{"name":"x","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}],)"
                       R"("parameters":{"binary_data_output":true}})";
  float values[2] = {1.25f, -7.5f};
  std::string body = header + std::string(reinterpret_cast<const char*>(values), sizeof(values));
  InferRequest request = parse_ok(body, std::to_string(header.size()));
  ASSERT_EQ(request.inputs.size(), 1u);
  EXPECT_TRUE(request.binary_data_output);
  EXPECT_EQ(std::memcmp(request.inputs[0].data.data(), values, sizeof(values)), 0);

  InferResponse response;
  response.model_name = "m";
  response.model_version = "1";
  response.outputs = {request.inputs[0]};
  response.output_binary = {true};
  auto encoded_or_error = encode_http_infer_response(response);
  ASSERT_TRUE(std::holds_alternative<HttpBody>(encoded_or_error));
  HttpBody& encoded = std::get<HttpBody>(encoded_or_error);
  ASSERT_TRUE(encoded.header_length);
  EXPECT_EQ(encoded.content_type, "application/octet-stream");
  nlohmann::json json = nlohmann::json::parse(encoded.content.substr(0, *encoded.header_length));
  EXPECT_EQ(json["outputs"][0]["parameters"]["binary_data_size"], 8);
  EXPECT_EQ(encoded.content.substr(*encoded.header_length), std::string(reinterpret_cast<const char*>(values), 8));
}

TEST(HttpCodec, MalformedBodiesAreBadRequests) {
  EXPECT_EQ(parse_error("{"), "the request body is not valid JSON");
  EXPECT_EQ(parse_error("[]"), "the request body must be a JSON object");
  EXPECT_EQ(parse_error("{}"), "'inputs' must be a list");
  EXPECT_NE(parse_error(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP99","data":[1]}]})").find("unsupported datatype"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"inputs":[{"name":"x","shape":[-1],"datatype":"FP32","data":[1]}]})").find("non-negative"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"inputs":[{"name":"x","shape":[4611686018427387904,4],"datatype":"FP32","data":[1]}]})")
                .find("element count overflows"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"inputs":[{"name":"x","shape":[100000000000],"datatype":"FP32","data":[1]}]})")
                .find("'data' holds 1 values where the shape needs 100000000000"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"inputs":[{"name":"x","shape":[1],"datatype":"INT8","data":[300]}]})").find("must hold 1 INT8"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":["a"]}]})").find("must hold"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[[[[1]]]]}]})").find("must hold"),
            std::string::npos);
  std::string header = R"({"inputs":[{"name":"x","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}]})";
  EXPECT_NE(parse_error(header + "1234", std::to_string(header.size())).find("runs past the end"), std::string::npos);
  EXPECT_NE(parse_error(header + "123456789", std::to_string(header.size())).find("left over"), std::string::npos);
  EXPECT_NE(parse_error(header, "99999").find("not a length within the body"), std::string::npos);
  EXPECT_NE(parse_error(header, "-1").find("not a length within the body"), std::string::npos);
}

TEST(ModelConfig, ParsesTritonStyleKeysAndRefusesUnknownOnes) {
  auto config = parse_model_config(R"({"max_batch_size": 16,
      "dynamic_batching": {"max_queue_delay_microseconds": 500, "preferred_batch_size": [4, 8]},
      "instance_group": {"count": 2, "threads": 1}, "max_queue_size": 64, "input_shapes": {"x": [16, 3]}})");
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  EXPECT_EQ(config->max_batch_size, 16);
  EXPECT_TRUE(config->dynamic_batching);
  EXPECT_EQ(config->max_queue_delay_us, 500);
  EXPECT_EQ(config->preferred_batch_sizes, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(config->instance_count, 2);
  EXPECT_EQ(config->max_queue_size, 64);
  EXPECT_EQ(config->input_shapes.at("x"), (Shape{16, 3}));
  EXPECT_FALSE(parse_model_config(R"({"dynamic_batching": false})")->dynamic_batching);
  EXPECT_EQ(parse_model_config(R"({"max_bach_size": 4})").status().message(), "unknown key 'max_bach_size'");
  EXPECT_FALSE(parse_model_config(R"({"max_batch_size": 0})").ok());
  EXPECT_FALSE(parse_model_config(R"({"max_batch_size": 4, "dynamic_batching": {"preferred_batch_size": [8]}})").ok());
  EXPECT_FALSE(parse_model_config("not json").ok());
}

// Every number has a range; the error names the key and the value (no silent clamp, no overflow).
TEST(ModelConfig, NumbersOutsideTheirRangeAreRefusedNamingTheKey) {
  auto message = [](const char* text) { return parse_model_config(text).status().message(); };
  EXPECT_EQ(message(R"({"dynamic_batching": {"max_queue_delay_microseconds": 10000000000000}})"),
            "'dynamic_batching.max_queue_delay_microseconds' must be in 0..10000000, got 10000000000000");
  EXPECT_EQ(message(R"({"dynamic_batching": {"max_queue_delay_microseconds": 9223372036854775807}})"),
            "'dynamic_batching.max_queue_delay_microseconds' must be in 0..10000000, got 9223372036854775807");
  EXPECT_EQ(message(R"({"instance_group": {"count": 1000000}})"), "'instance_group.count' must be in 1..256, got 1000000");
  EXPECT_EQ(message(R"({"instance_group": {"threads": 0}})"), "'instance_group.threads' must be in 1..256, got 0");
  EXPECT_EQ(message(R"({"max_batch_size": 18446744073709551615})"),
            "'max_batch_size' must be in 1..4096, got 18446744073709551615");
  EXPECT_EQ(message(R"({"max_queue_size": 1.5})"), "'max_queue_size' must be an integer");
  EXPECT_EQ(message(R"({"input_shapes": {"x": [65536, 65536, 65536]}})"), "'input_shapes.x' has more than 2147483648 elements");
  EXPECT_TRUE(parse_model_config(R"({"dynamic_batching": {"max_queue_delay_microseconds": 10000000}})").ok());
  EXPECT_TRUE(parse_model_config(R"({"instance_group": {"count": 256}})").ok());
}

}  // namespace
}  // namespace qdqrt::server

namespace qdqrt::server {
namespace {

// A huge array of tiny values is refused before a DOM is built (it would cost ~40x the text).
TEST(HttpCodec, JsonWithTooManyValuesIsRefusedBeforeParsing) {
  std::string body = R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[)";
  body.reserve(body.size() + 2 * (kMaxJsonElements + 10));
  for (size_t index = 0; index <= kMaxJsonElements; ++index) body += index ? ",0" : "0";
  body += "]}]}";
  auto parsed = parse_http_infer_request(body, std::nullopt);
  ASSERT_TRUE(std::holds_alternative<ServeError>(parsed));
  EXPECT_NE(std::get<ServeError>(parsed).message.find("more than 4194304 values"), std::string::npos)
      << std::get<ServeError>(parsed).message;
  std::string deep = std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  auto nested = parse_http_infer_request(deep, std::nullopt);
  ASSERT_TRUE(std::holds_alternative<ServeError>(nested));
  EXPECT_NE(std::get<ServeError>(nested).message.find("nests deeper than 64"), std::string::npos);
  EXPECT_EQ(std::get<ServeError>(parse_http_infer_request("  ", std::nullopt)).message, "the request body is empty");
}

// Triton's classification extension is refused, not ignored.
TEST(HttpCodec, ClassificationIsRefused) {
  auto parsed = parse_http_infer_request(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]}],)"
                                         R"("outputs":[{"name":"y","parameters":{"classification":3}}]})",
                                         std::nullopt);
  ASSERT_TRUE(std::holds_alternative<ServeError>(parsed));
  EXPECT_EQ(std::get<ServeError>(parsed).message, "output 'y': the classification extension is not supported");
}

// FP32 values outside float's range are refused like out-of-range integers, not made inf.
TEST(HttpCodec, FloatOutsideRangeIsBadRequest) {
  for (const char* value : {"3.5e38", "-1e39", "1e308"}) {
    std::string body = std::string(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[)") + value + "]}]}";
    auto parsed = parse_http_infer_request(body, std::nullopt);
    ASSERT_TRUE(std::holds_alternative<ServeError>(parsed)) << value;
    EXPECT_NE(std::get<ServeError>(parsed).message.find("within the datatype's range"), std::string::npos) << value;
  }
  // A number past double's range is not valid JSON to the parser: refused too.
  EXPECT_TRUE(std::holds_alternative<ServeError>(
      parse_http_infer_request(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1e999]}]})", std::nullopt)));
  auto parsed = parse_http_infer_request(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[3.4e38]}]})",
                                         std::nullopt);
  ASSERT_TRUE(std::holds_alternative<InferRequest>(parsed));
  auto wide = parse_http_infer_request(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP64","data":[1e300]}]})",
                                       std::nullopt);
  ASSERT_TRUE(std::holds_alternative<InferRequest>(wide));
}

// NaN/Inf outputs: JSON cannot carry them (they used to become null); binary data does.
TEST(HttpCodec, NonFiniteOutputsAreRefusedInJsonAndCarriedAsBinary) {
  InferResponse response;
  response.model_name = "m";
  response.model_version = "1";
  InferTensor output{"scores", DataType::kFloat, {2}, {}};
  float values[2] = {1.0f, std::numeric_limits<float>::quiet_NaN()};
  output.data.assign(reinterpret_cast<uint8_t*>(values), reinterpret_cast<uint8_t*>(values) + sizeof(values));
  response.outputs = {output};
  response.output_binary = {false};
  auto as_json = encode_http_infer_response(response);
  ASSERT_TRUE(std::holds_alternative<ServeError>(as_json));
  EXPECT_EQ(std::get<ServeError>(as_json).kind, ErrorKind::kBadRequest);
  EXPECT_NE(std::get<ServeError>(as_json).message.find("output 'scores' holds NaN or Inf"), std::string::npos);
  response.output_binary = {true};
  auto as_binary = encode_http_infer_response(response);
  ASSERT_TRUE(std::holds_alternative<HttpBody>(as_binary));
  const HttpBody& body = std::get<HttpBody>(as_binary);
  EXPECT_EQ(body.content.substr(*body.header_length), std::string(reinterpret_cast<const char*>(values), sizeof(values)));
}

}  // namespace
}  // namespace qdqrt::server
