/// @file test_curve.h
/// test_per_epoch.csv: the test split scored after every epoch, written only
/// by runs whose spec sets "test_every_epoch" (docs/cli.md). It exists for
/// study plots (`magmadnn compare`); nothing in training reads it: early
/// stopping and the best-epoch choice look at the validation split only.
///
///   epoch,test_loss,test_accuracy
///   1,0.61234,0.7812
///
/// Guarantees: parse_test_curve_csv(test_curve_csv(c)) == c to the 9
/// significant digits written; a malformed file throws IOError naming the
/// file, the line and the field.
#pragma once

#include <string>
#include <vector>

#include "magmadnn/run/run_training.h"

namespace magmadnn::cli {

using TestCurve = std::vector<run::EpochTest>;

std::string test_curve_csv(const TestCurve& curve);
TestCurve parse_test_curve_csv(const std::string& text, const std::string& source);

}  // namespace magmadnn::cli
