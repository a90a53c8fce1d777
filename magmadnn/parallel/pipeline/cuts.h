/// @file cuts.h
/// Where a chain of layers is cut into pipeline stages, and the checks a
/// cut must pass before training (docs/hybrid.md, "Pipelines").
///
/// A plan is `first`: the index of each stage's first layer, so stage s
/// holds layers [first[s], first[s + 1]) and the last stage the rest.
/// Guarantees: every function here either returns a valid plan or throws
/// ValueError whose message says what is wrong and with which numbers.
#pragma once

#include <cstdint>
#include <vector>

namespace magmadnn::distributed::pipeline {

/// The cut of `cost.size()` layers into `stages` consecutive non-empty
/// stages whose largest total cost is the least possible (ties: the earliest
/// cuts). `cost[i]` is layer i's estimated cost (e.g. its parameter count
/// plus one, so a layer without parameters still counts). `allowed`, when
/// not empty (one entry per layer), says before which layers a stage may
/// start (cut_points). ValueError when stages < 1, stages > cost.size(), or
/// there are fewer allowed places than stages - 1.
std::vector<int> balanced_cuts(const std::vector<double>& cost, int stages, const std::vector<bool>& allowed = {});

/// Before which layers a stage may start, given what each layer reads
/// (`reads[j]`: indices of the layers j reads, -1 for the network's input):
/// before layer c when no layer from c on reads a layer before c - 1, so
/// that one message (layer c - 1's output) carries all a stage needs.
/// Entry 0 is true.
std::vector<bool> cut_points(const std::vector<std::vector<int>>& reads);

/// Checks a plan given by hand for `layers` layers: first[0] == 0, strictly
/// increasing, every entry < layers (ValueError naming the entry otherwise).
void check_cuts(const std::vector<int>& first, int layers);

/// Checks that a pipeline of `stages` stages can run: at least one layer
/// per stage, one rank per stage (`ranks` ranks, all of them stages) and
/// micro_batches >= 1 (ValueError with the reason).
void check_pipeline(int stages, int layers, int ranks, int micro_batches);
/// Checks that `micro_batches` divide `batch` (every micro-batch the same
/// size; ValueError naming both otherwise).
void check_micro_batches(std::int64_t batch, int micro_batches);

/// Checks that only the output of a stage's last layer crosses into the
/// next stage: `reads[j]` lists the layers layer j reads. A layer that
/// reads a layer of an earlier stage other than the last layer of the stage
/// just before (a cut inside a residual branch or across a skip
/// connection) would need a second message: ValueError naming both layers
/// and the cut.
void check_no_crossing(const std::vector<int>& first, const std::vector<std::vector<int>>& reads);

/// The stage that holds `layer` under `first`.
int stage_of(const std::vector<int>& first, int layer);

}  // namespace magmadnn::distributed::pipeline
