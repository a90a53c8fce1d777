// docs/custom_layer.md: the gradient check of the header block's layer, as
// a GoogleTest case.
#include <gtest/gtest.h>

#include "@custom_layer_header@"
#include "layer/layer_gradcheck.h"
using namespace magmadnn;
// @head@

// @snippet@
