// tach report RUN_DIR: the run's report.html (and, with --pdf, report.pdf through headless Chromium).
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "tach/error.h"
#include "tach/report.h"

namespace tach::cli {

namespace {

struct ReportOptions {
  std::string run_dir;
  bool pdf = false;
};

// Debian's chromium (or chromium-browser / google-chrome elsewhere), found on PATH.
std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    const std::string cmd = std::string("command -v ") + name + " > /dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return name;
  }
  return "";
}

int run_report(const ReportOptions& opt) {
  const std::string html = write_run_report(opt.run_dir);
  std::cout << "wrote " << html << " (self-contained: open it from disk in any browser)\n";
  if (!opt.pdf) return 0;
  const std::string chromium = find_chromium();
  check(!chromium.empty(),
        "--pdf prints the report through headless Chromium, which is not installed: `sudo apt-get install chromium` "
        "(Debian), then run tach report --pdf again. report.html is written either way");
  const auto pdf = std::filesystem::path(opt.run_dir) / "report.pdf";
  const std::string cmd = chromium + " --headless --no-sandbox --disable-gpu --no-pdf-header-footer --print-to-pdf='" +
                          std::filesystem::absolute(pdf).string() + "' 'file://" +
                          std::filesystem::absolute(html).string() + "' > /dev/null 2>&1";
  check(std::system(cmd.c_str()) == 0 && std::filesystem::exists(pdf),
        chromium + " did not print " + pdf.string() + " (command: " + cmd + ")");
  std::cout << "wrote " << pdf.string() << " (printed by " << chromium << ")\n";
  return 0;
}

}  // namespace

Command add_report_command(CLI::App& app) {
  auto opt = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand(
      "report",
      "Write RUN_DIR/report.html from a bench, eval or run directory: one self-contained page (no script, nothing "
      "fetched) with the run's header, the sweep against batch size, a metrics heatmap, latency distributions, "
      "accuracy and the confusion matrix, the profile's op tables, the findings; every charted number in a table");
  sub->add_option("run_dir", opt->run_dir, "The run directory (runs/<id>)")->required();
  sub->add_flag("--pdf", opt->pdf, "Also print report.pdf through headless Chromium (Debian's chromium)");
  return {sub, [opt] { return run_report(*opt); }};
}

}  // namespace tach::cli
