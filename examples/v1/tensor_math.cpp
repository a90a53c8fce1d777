// A MagmaDNN v1-style program, kept to prove that v1 code compiles and runs
// unchanged against magmadnn: it builds the affine map A x + b as a compute
// graph over raw Tensor pointers, evaluates it, prints it and cleans up the
// v1 way (deleting the tensors and the head of the expression).
#include <cstdio>

#include "magmadnn.h"

using namespace magmadnn;

int main(int argc, char** argv) {
  magmadnn_init();

  const unsigned int rows = 5;
  const unsigned int cols = 4;

  // Tensors owned by the program, wrapped by variables that share them.
  Tensor<float>* a_values = new Tensor<float>({rows, cols}, {CONSTANT, {3}}, HOST);
  Tensor<float>* x_values = new Tensor<float>({cols, 1}, {CONSTANT, {2}}, HOST);
  auto A = op::var("A", a_values);
  auto x = op::var("x", x_values);
  // A variable that creates its own tensor.
  auto b = op::var<float>("b", {rows, 1}, {ONE, {}}, HOST);

  auto affine = op::add(op::matmul(A, x), b);
  Tensor<float>* result = affine->eval();

  std::printf("Ax+b = {");
  for (int i = 0; i < (int) rows; i++) {
    std::printf("%.1f%s", result->get({i, 0}), (i != (int) rows - 1) ? ", " : "}\n");
  }

  delete a_values;
  delete x_values;
  delete affine;

  magmadnn_finalize();
  return 0;
}
