// magmadnn compare: several run folders -> one page of loss and accuracy against time (compare.h).
#include <ostream>

#include "args.h"
#include "cli.h"
#include "compare.h"
#include "magmadnn/io/atomic_file.h"
#include "output_guard.h"

namespace magmadnn::cli {
namespace {

const std::vector<OptionSpec> kOptions = {
    {"out", "FILE", "the HTML page to write (required)"},
};

const char* kAbout =
    "Plots the training loss and the accuracy of every given run folder against training time,\n"
    "one curve per run labelled by its ranks and strategy, with a table of their results, on one\n"
    "self-contained HTML page. The runs must have trained on the same data set.";

}  // namespace

int compare_command(const std::vector<std::string>& args, std::ostream& out) {
  // Run folders are the positional arguments.
  const SplitArgs split = split_positional(args, kOptions);
  const std::vector<std::string>& dirs = split.positional;
  const ParsedArgs p = parse_args("magmadnn compare", split.options, kOptions);
  if (p.has("help")) {
    out << usage_text("magmadnn compare RUN_DIR... --out FILE", kAbout, kOptions);
    return 0;
  }
  if (!p.has("out")) throw UsageError("magmadnn compare: --out FILE is required (the page to write)");
  if (dirs.empty()) {
    throw UsageError("magmadnn compare: no run folder given (usage: magmadnn compare RUN_DIR... --out FILE)");
  }
  // Before reading anything: the page must not land on a file of a run (or
  // search), and its folder must take a new file.
  std::vector<NamedInput> inputs;
  for (const auto& d : dirs) inputs.push_back({"run folder", d});
  check_output_file("magmadnn compare", "out", p.str("out"), inputs);
  std::vector<CompareRun> runs;
  for (const auto& d : dirs) runs.push_back(read_compare_run(d));
  check_comparable(runs);
  const std::string page = p.str("out");
  io::write_file_atomic(page, render_compare(runs));
  out << "magmadnn compare: " << runs.size() << (runs.size() == 1 ? " run" : " runs") << " -> " << page << "\n";
  for (const auto& r : runs) out << "  " << run_label(r) << " (" << r.dir << ")\n";
  return 0;
}

}  // namespace magmadnn::cli
