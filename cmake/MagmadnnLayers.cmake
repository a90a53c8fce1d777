# The library's layers, declared once. Read by magmadnn/CMakeLists.txt (one
# shared library per layer, each linked only against the layers below it)
# and by cmake/layering.cmake (the include check run at every build, and
# the layering table of docs/design.md, generated from the include graph).
#
# Bottom to top. A layer is a set of folders of magmadnn/; its code may
# include its own folders and the folders listed in MAY_INCLUDE, nothing
# else. The base library (core to model, data and io) knows no ranks: it
# builds and links with no other layer.
set(MAGMADNN_LAYERS core onnx comm dmath parallel app)

set(MAGMADNN_LAYER_FOLDERS_core core memory tensor backend compute conv layer optimizer model data io)
set(MAGMADNN_LAYER_FOLDERS_onnx onnx)
set(MAGMADNN_LAYER_FOLDERS_comm comm)
set(MAGMADNN_LAYER_FOLDERS_dmath dmath)
set(MAGMADNN_LAYER_FOLDERS_parallel parallel)
set(MAGMADNN_LAYER_FOLDERS_app run tune)

set(MAGMADNN_LAYER_MAY_INCLUDE_core "")
# ONNX export and import: a network of the core layer to and from an ONNX
# graph. Optional (MAGMADNN_ONNX, libonnx-dev), so no layer above links or
# includes it; the command (apps/) and its tests link it beside magmadnn.
set(MAGMADNN_LAYER_MAY_INCLUDE_onnx ${MAGMADNN_LAYER_FOLDERS_core})
# Communicators move bytes: errors and types from core/, device buffers from backend/.
set(MAGMADNN_LAYER_MAY_INCLUDE_comm core backend)
# Distributed matrices: local tensors and their math, moved by communicators.
set(MAGMADNN_LAYER_MAY_INCLUDE_dmath core memory tensor backend comm)
set(MAGMADNN_LAYER_MAY_INCLUDE_parallel ${MAGMADNN_LAYER_FOLDERS_core} comm dmath)
set(MAGMADNN_LAYER_MAY_INCLUDE_app ${MAGMADNN_LAYER_FOLDERS_core} comm dmath parallel)

# The shared library each layer builds (the top one keeps the v1 name, and
# links every layer below it, so magmadnn::magmadnn is the whole library).
set(MAGMADNN_LAYER_TARGET_core magmadnn_core)
set(MAGMADNN_LAYER_TARGET_onnx magmadnn_onnx)
set(MAGMADNN_LAYER_TARGET_comm magmadnn_comm)
set(MAGMADNN_LAYER_TARGET_dmath magmadnn_dmath)
set(MAGMADNN_LAYER_TARGET_parallel magmadnn_parallel)
set(MAGMADNN_LAYER_TARGET_app magmadnn)
