// Writes DIR/report.html from DIR/results.json (write_tune_report), so the
// page can be rendered and checked in a browser before `magmadnn tune`
// exists to write it.
//   tune_report_page DIR
#include <exception>
#include <iostream>

#include "tune_report.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: tune_report_page DIR (DIR holds results.json)\n";
    return 2;
  }
  try {
    magmadnn::cli::write_tune_report(argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "tune_report_page: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
