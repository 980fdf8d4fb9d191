// An engine from a graph a command changed in memory (calibrate's Q/DQ insertion, exec's --calib
// and --layerPrecisions), built exactly as from the ONNX file it would save.
#pragma once

#include <memory>

#include "core/graph.h"
#include "core/status.h"
#include "engine/engine.h"

namespace qdqrt::tools {

// The graph goes through ONNX bytes in memory, not Engine::build(Graph): the build's input shapes
// (--shapes, a symbolic batch) need the loader's shape inference over the whole graph, which
// Engine::build(Graph) does not run (it needs every shape static already).
Result<std::shared_ptr<const engine::Engine>> build_engine_from_graph(const Graph& graph,
                                                                      const engine::BuildOptions& build);

}  // namespace qdqrt::tools
