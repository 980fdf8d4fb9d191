// KServe v2 gRPC messages to and from the transport-independent request and response. Pure
// functions: the request side is fuzzed by tests/server/fuzz.
#pragma once

#include <variant>

#include "server/grpc_predict_v2.pb.h"
#include "server/infer_types.h"

namespace qdqrt::server {

// Inputs come from raw_input_contents (one entry per input, in order) or each input's typed
// `contents`; mixing the two, sizes that do not match the shape, or unknown datatypes are
// kBadRequest errors. Never throws.
std::variant<InferRequest, ServeError> request_from_grpc(inference::ModelInferRequest& message);
// Outputs as raw_output_contents (what Triton's clients read).
void response_to_grpc(InferResponse& response, inference::ModelInferResponse& message);

}  // namespace qdqrt::server
