/// @file run_names.h
/// The command is a thin shell over the library's run specification and
/// training run (magmadnn/run/): it parses flags into a run::TrainSpec,
/// calls run::TrainingRun and prints what comes back, so it uses those names
/// unqualified.
#pragma once

#include "magmadnn/run/spec.h"

namespace magmadnn::cli {
using namespace magmadnn::run;
}  // namespace magmadnn::cli
