#include "magmadnn/backend/unary_op_table.h"

#include "magmadnn/core/errors.h"

namespace magmadnn {

const UnaryOpInfo& unary_op_info(UnaryOp op) {
  const auto i = static_cast<std::size_t>(op);
  MAGMADNN_CHECK(i < kUnaryOpTable.size(), ValueError,
                 "UnaryOp value " << i << " is not an op (the table has " << kUnaryOpTable.size() << " rows)");
  return kUnaryOpTable[i];
}

std::string unary_op_names(bool (*keep)(const UnaryOpInfo&)) {
  std::string s;
  for (const UnaryOpInfo& row : kUnaryOpTable) {
    if (!keep(row)) continue;
    if (!s.empty()) s += ", ";
    s += row.name;
  }
  return s;
}

}  // namespace magmadnn
