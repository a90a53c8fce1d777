/// @file onnx.h
/// ONNX export and import: a network of magmadnn's layers to an ONNX model
/// file, and an ONNX model file to a graph of magmadnn's layers and ops
/// (docs/onnx.md). Built only when the build found Debian's libonnx-dev
/// (MAGMADNN_HAVE_ONNX, the magmadnn_onnx library); this header includes no
/// ONNX or protobuf header, so a program that links magmadnn_onnx needs
/// neither.
///
///   onnx::export_model(net, "model.onnx");             // inference form, batch axis "N"
///   onnx::Imported g = onnx::import_model("model.onnx");
///   auto net = onnx::import_network("model.onnx", optimizer::CROSS_ENTROPY, optimizer::SGD, params);
///
/// Export guarantees: the file is written atomically and only after ONNX's
/// own checker (onnx::checker::check_model) accepted the model; it is the
/// inference form (batch normalisation with its running statistics,
/// dropout removed), opset kExportOpset, with the batch axis left free
/// (dim_param "N"). A layer kind export does not know is refused
/// (NotSupportedError naming the layer and its kind) before anything is
/// written.
///
/// Import guarantees: every node's operator, domain and opset version is
/// checked against the importer's table before anything is built; an
/// unsupported operator is refused naming the op, the node and the opset
/// (NotSupportedError). A file that is not a model (truncated, corrupt,
/// empty) is an IOError naming the file; an unknown domain or an opset
/// newer than kMaxImportOpset, a missing external-data file, a cycle, an
/// input no earlier node produces, or shapes and types that do not fit are
/// errors naming the file, the node (index, name and op) and the field.
/// Nothing half-built is returned: the result exists only when every node
/// was built. Initializers read by Gemm, Conv and BatchNormalization become
/// the trainable weights of FullyConnected, Conv2D and BatchNorm layers;
/// those read as ConvTranspose's W and B, LayerNormalization's and
/// InstanceNormalization's scale and bias, PRelu's slope and a float
/// Gather table (computed indices) become the trainable weights of the
/// node's layer; other initializers are constants.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "magmadnn/model/neural_network.h"

namespace magmadnn::onnx {

/// The opset export writes (ONNX 1.12, Debian 12's, knows up to 17; ONNX
/// Runtime reads it).
inline constexpr int kExportOpset = 17;
/// The newest default-domain opset import accepts.
inline constexpr int kMaxImportOpset = 22;

/// Writes `net`'s prediction (what predict() returns) as an ONNX model to
/// `path`. The network is read, not changed (its mode is left as it was).
/// Requires a network whose first layer is an Input layer and whose layers
/// are Input, FullyConnected, Conv2D, Pooling2D, BatchNorm, Dropout,
/// Flatten, Activation, Add, Concat, Residual or Output.
void export_model(model::NeuralNetwork<float>& net, const std::string& path);
/// The same model as serialized bytes (nothing written).
std::string export_model_bytes(model::NeuralNetwork<float>& net);

/// Runs ONNX's checker on the model file `path`; ValueError naming the file
/// and the checker's message when it refuses, IOError when it cannot be read.
void check_model_file(const std::string& path);

/// A model imported as a graph of magmadnn layers.
struct Imported {
  /// The graph inputs (initializers excluded), as placeholders whose
  /// pattern has -1 where the model's axis is symbolic or unknown.
  std::vector<std::pair<std::string, op::Var<float>>> inputs;
  /// The graph outputs, in the model's order.
  std::vector<std::pair<std::string, op::Expr<float>>> outputs;
  /// Every layer built, the Input layers first, in node order; the layer
  /// computing outputs[0] is last, so the list is a NeuralNetwork's.
  std::vector<std::shared_ptr<layer::Layer<float>>> layers;
  std::int64_t opset = 0;  ///< the default domain's opset version
};

/// Reads and builds the model at `path` (see the import guarantees).
/// The layers are in eval mode (inference); a placeholder's initial value
/// has size 1 on its free axes.
Imported import_model(const std::string& path);
/// The same from bytes; `source` names them in messages.
Imported import_model_bytes(const std::string& bytes, const std::string& source,
                            const std::string& base_dir = ".");

/// A trainable network from the model at `path`, which must have one input
/// and one output: the loss and optimizer come from the caller (a config).
std::unique_ptr<model::NeuralNetwork<float>> import_network(const std::string& path, optimizer::loss_t loss,
                                                            optimizer::optimizer_t opt, model::nn_params_t params);

/// A TensorProto file (the node tests' input_0.pb ...) as a float tensor
/// (a scalar as {1}); IOError when it does not parse, NotSupportedError for
/// an element type other than float, double, bool or an 8- to 64-bit integer.
Tensor<float> read_tensor_file(const std::string& path);

/// The ONNX operators import builds (default domain), sorted.
std::vector<std::string> supported_ops();

}  // namespace magmadnn::onnx
