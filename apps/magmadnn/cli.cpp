#include "cli.h"

#include <ostream>

#include "args.h"
#include "run_names.h"
#include "magmadnn/core/config.h"
#include "magmadnn/core/registry.h"
#include "magmadnn/tune/searcher.h"

namespace magmadnn::cli {
namespace {

// Built when asked, so that the searchers listed are those registered.
std::string top_help() {
  return "usage: magmadnn <command> [options]\n"
         "\n"
         "commands:\n"
         "  train      train a network from a JSON config or a preset (mlp, lenet5, resnet, resnet50, ...)\n"
         "             and write a run folder (metrics.csv, summary.json, checkpoint, report.html)\n"
         "  evaluate   test accuracy and loss of a checkpoint\n"
         "  predict    class predictions of a checkpoint for IDX or CSV inputs\n"
         "  bench      benchmarks (bench conv: convolution algorithms)\n"
         "  compare    loss and accuracy of several run folders against time, on one HTML page\n"
         "  export     a run's network as an ONNX model (--onnx FILE)\n"
         "  import     an ONNX model as a run folder, optionally trained further (--out DIR)\n"
         "  tune       hyperparameter search (" +
         names_text(tune::searcher_names(), ", ") +
         ") in one process, local workers\n"
         "             or under mpirun; writes a journal, results and the best config\n"
         "  flight     merges the flight-recorder files of a failed job and names the rank and\n"
         "             collective where the ranks diverge\n"
         "\n"
         "`magmadnn <command> --help` lists the options of a command.\n";
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    (args.empty() ? err : out) << top_help();
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    out << "magmadnn " << MAGMADNN_VERSION_MAJOR << '.' << MAGMADNN_VERSION_MINOR << '.' << MAGMADNN_VERSION_PATCH
        << "\n";
    return 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (args[0] == "train") return train_command(rest, out);
    if (args[0] == "evaluate") return evaluate_command(rest, out);
    if (args[0] == "predict") return predict_command(rest, out);
    if (args[0] == "bench") return bench_command(rest, out);
    if (args[0] == "compare") return compare_command(rest, out);
    if (args[0] == "tune") return tune_command(rest, out);
    if (args[0] == "export") return export_command(rest, out);
    if (args[0] == "import") return import_command(rest, out);
    if (args[0] == "flight") return flight_command(rest, out);
    err << "magmadnn: error: unknown command \"" << args[0] << "\"\n\n" << top_help();
    return 2;
  } catch (const UsageError& e) {
    err << "magmadnn: error: " << e.what() << "\n";
    return 2;
  } catch (const ConfigError& e) {
    err << "magmadnn: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    out.flush();
    err << "magmadnn: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace magmadnn::cli
