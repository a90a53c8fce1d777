#include "magmadnn/parallel/pipeline/cuts.h"

#include <algorithm>
#include <limits>

#include "magmadnn/core/errors.h"

namespace magmadnn::distributed::pipeline {

std::vector<bool> cut_points(const std::vector<std::vector<int>>& reads) {
  const int n = static_cast<int>(reads.size());
  std::vector<bool> ok(n, true);
  // earliest[c]: the earliest layer that layers c.. read.
  int earliest = n;
  for (int c = n - 1; c >= 1; --c) {
    for (int i : reads[c]) earliest = std::min(earliest, i);
    ok[c] = earliest >= c - 1;
  }
  return ok;
}

std::vector<int> balanced_cuts(const std::vector<double>& cost, int stages, const std::vector<bool>& allowed) {
  const int n = static_cast<int>(cost.size());
  MAGMADNN_CHECK(stages >= 1 && stages <= n, ValueError,
                 "pipeline: " << stages << " stages for " << n << " layers (each stage needs a layer)");
  const auto may_start = [&](int k) { return k == 0 || allowed.empty() || allowed[k]; };
  const int places = static_cast<int>(std::count_if(allowed.begin(), allowed.end(), [](bool b) { return b; }));
  MAGMADNN_CHECK(allowed.empty() || places >= stages, ValueError,
                 "pipeline: " << stages << " stages, but the network can be cut in only " << places - 1
                              << " places (a cut inside a branch, such as a residual block's, is not one)");
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + cost[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[s][i]: the least largest stage cost of the first i layers in s stages;
  // from[s][i]: where that plan's last stage starts.
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> from(stages + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0.0;
  for (int s = 1; s <= stages; ++s) {
    for (int i = s; i <= n; ++i) {
      for (int k = s - 1; k < i; ++k) {
        if (!may_start(k)) continue;
        const double v = std::max(best[s - 1][k], prefix[i] - prefix[k]);
        if (v < best[s][i]) best[s][i] = v, from[s][i] = k;
      }
    }
  }
  std::vector<int> first(stages);
  for (int s = stages, i = n; s >= 1; --s) {
    first[s - 1] = from[s][i];
    i = from[s][i];
  }
  return first;
}

void check_cuts(const std::vector<int>& first, int layers) {
  MAGMADNN_CHECK(!first.empty() && first[0] == 0, ValueError,
                 "pipeline: the first stage must start at layer 0");
  for (std::size_t s = 1; s < first.size(); ++s) {
    MAGMADNN_CHECK(first[s] > first[s - 1], ValueError,
                   "pipeline: stage " << s << " starts at layer " << first[s] << ", not after stage " << s - 1
                                      << "'s first layer " << first[s - 1] << " (each stage needs a layer)");
    MAGMADNN_CHECK(first[s] < layers, ValueError,
                   "pipeline: stage " << s << " starts at layer " << first[s] << " but the network has " << layers
                                      << " layers");
  }
}

void check_pipeline(int stages, int layers, int ranks, int micro_batches) {
  MAGMADNN_CHECK(stages >= 1, ValueError, "pipeline: stages must be >= 1, got " << stages);
  MAGMADNN_CHECK(stages <= layers, ValueError,
                 "pipeline: " << stages << " stages but the network has only " << layers
                              << " layers (each stage needs at least one)");
  MAGMADNN_CHECK(stages == ranks, ValueError,
                 "pipeline: " << stages << " stages need " << stages << " ranks (one per stage), the run has "
                              << ranks);
  MAGMADNN_CHECK(micro_batches >= 1, ValueError, "pipeline: micro_batches must be >= 1, got " << micro_batches);
}

void check_micro_batches(std::int64_t batch, int micro_batches) {
  MAGMADNN_CHECK(batch % micro_batches == 0, ValueError,
                 "pipeline: " << micro_batches << " micro-batches do not divide the batch of " << batch
                              << " (every micro-batch must have the same size)");
}

int stage_of(const std::vector<int>& first, int layer) {
  const auto it = std::upper_bound(first.begin(), first.end(), layer);
  return static_cast<int>(it - first.begin()) - 1;
}

void check_no_crossing(const std::vector<int>& first, const std::vector<std::vector<int>>& reads) {
  for (int j = 0; j < static_cast<int>(reads.size()); ++j) {
    const int sj = stage_of(first, j);
    for (int i : reads[j]) {
      const int si = stage_of(first, i);
      if (si == sj) continue;
      // Only the last layer of the stage just before may feed a stage.
      const bool ok = si == sj - 1 && i == first[sj] - 1;
      MAGMADNN_CHECK(ok, ValueError,
                     "pipeline: layer " << j << " (stage " << sj << ") reads layer " << i << " (stage " << si
                                        << "): the cut before layer " << first[sj]
                                        << " is inside a branch (a residual or skip connection); "
                                           "only the output of a stage's last layer can cross to the next stage");
    }
  }
}

}  // namespace magmadnn::distributed::pipeline
