// The blocked activation layout: its block size on this CPU and the reorders
// between it and NCHW, by oneDNN's reorder primitive (parallel, vectorised).
// The primitives are made once per shape and direction and cached: a network
// reorders the same few shapes at its edges every step.
#include "magmadnn/conv/layout.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "magmadnn/conv/conv_bf16.h"
#include "magmadnn/conv/onednn_util.h"
#include "magmadnn/core/errors.h"

namespace magmadnn::conv {
namespace {

using dnnl::memory;

int detect_block() {
  // 0 turns the layouts off; 8 or 16 forces that block (oneDNN then
  // reorders inside each convolution where its kernels want the other one:
  // for tests of the other ISA's block on this machine).
  if (const char* env = std::getenv("MAGMADNN_BLOCKED_LAYOUT"); env != nullptr && *env != '\0') {
    if (std::strcmp(env, "0") == 0) return 0;
    if (std::strcmp(env, "8") == 0) return 8;
    if (std::strcmp(env, "16") == 0) return 16;
  }
  // oneDNN's f32 convolutions block channels by the vector width of the ISA
  // they run on; asking with format_tag::any would say the same per problem.
  switch (onednn_compat::effective_isa_vector_bits()) {
    case 512: return 16;
    case 256: return 8;
    default: return 0;
  }
}

// A reorder primitive with the descriptions of the memory it reads and
// writes, made once per shape and direction.
struct Reorder {
  dnnl::memory::desc src, dst;
  dnnl::reorder prim;
};

const Reorder& reorder_for(const Shape& s, int from, int to) {
  static std::mutex mu;
  static std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, int>, Reorder> cache;
  std::lock_guard lock(mu);
  const auto key = std::make_tuple(s[0], s[1], s[2], s[3], from, to);
  auto it = cache.find(key);
  if (it == cache.end()) {
    const memory::dims dims{s[0], s[1], s[2], s[3]};
    const memory::desc src(dims, memory::data_type::f32, onednn::activation_tag(from));
    const memory::desc dst(dims, memory::data_type::f32, onednn::activation_tag(to));
    dnnl::engine& e = onednn::engine();
    it = cache.emplace(key, Reorder{src, dst, dnnl::reorder(dnnl::reorder::primitive_desc(e, src, e, dst))}).first;
  }
  return it->second;
}

}  // namespace

int blocked_layout_block() {
  static const int block = detect_block();
  return block;
}

int low_precision_layout() {
  static const int layout = blocked_layout_block() != 0 && bf16_conv_native() ? kChannelsLast : 0;
  return layout;
}

bool blockable(const Shape& s, int block) {
  const int lanes = block == kChannelsLast ? kChannelsLastLanes : block;
  return lanes > 0 && s.ndim() == 4 && s.numel() > 0 && s[1] % lanes == 0;
}

const Tensor<float>& in_layout(const Tensor<float>& t, int from, int to, Tensor<float>& scratch) {
  if (from == to) return t;
  MAGMADNN_CHECK(!t.on_device(), ValueError, "blocked layout: only host tensors are reordered, not GPU ones");
  for (int b : {from, to}) {
    MAGMADNN_CHECK(b == 0 || blockable(t.shape(), b), ValueError,
                   "blocked layout: a tensor of shape " << t.shape() << " cannot hold channel block " << b);
  }
  if (scratch.shape() != t.shape() || scratch.get_memory_type() != t.get_memory_type()) {
    scratch = Tensor<float>(t.shape(), t.get_memory_type(), t.get_device_id());
  }
  const Shape& s = t.shape();
  try {
    const Reorder& r = reorder_for(s, from, to);
    onednn::execute(r.prim, {{DNNL_ARG_FROM, onednn::wrap(r.src, t.data())},
                             {DNNL_ARG_TO, onednn::wrap(r.dst, scratch.mutable_data())}});
  } catch (const dnnl::error& e) {
    MAGMADNN_THROW(DeviceError, "blocked layout: reordering " << s << " from block " << from << " to " << to
                                                              << " failed: " << e.what());
  }
  return scratch;
}

}  // namespace magmadnn::conv
