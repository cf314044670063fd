// tach report RUN_DIR: the run's report.html; with --pdf, report.pdf through headless Chromium; with
// --png, every chart as RUN_DIR/plots/<name>.png; with --pptx, RUN_DIR/report.pptx.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "tach/error.h"
#include "tach/report.h"
#include "tach/slurm.h"

namespace tach::cli {

namespace {

struct ReportOptions {
  std::string run_dir;
  bool pdf = false, png = false, pptx = false;
  double png_scale = 2;
};

// Debian's chromium (or chromium-browser / google-chrome elsewhere), found on PATH.
std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}) {
    const std::string cmd = std::string("command -v ") + name + " > /dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return name;
  }
  return "";
}

// The figures as PNG files, then (with --pptx) the deck made of them.
void write_figures(const RunReport& report, const ReportOptions& opt) {
  const auto dir = std::filesystem::path(opt.run_dir);
  const std::vector<WrittenImage> pngs = write_report_pngs(report, (dir / "plots").string(), opt.png_scale);
  for (const auto& p : pngs) std::cout << "wrote " << p.path << " (" << p.width << "x" << p.height << " px)\n";
  if (!opt.pptx) return;
  const int slides = write_report_pptx(report, pngs, (dir / "report.pptx").string());
  std::cout << "wrote " << (dir / "report.pptx").string() << " (" << slides << " slides: the title, " << pngs.size()
            << " figures, the findings)\n";
}

// A run submitted with tach bench --slurm: its jobs, and the points not in yet.
void print_slurm_state(const std::string& run_dir) {
  if (!std::filesystem::is_directory(std::filesystem::path(run_dir) / "slurm")) return;
  for (const auto& line : slurm_status(run_dir)) std::cerr << "SLURM " << line << "\n";
  std::vector<PointKey> missing;
  const SweepOutcome run = collect_bench(run_dir, &missing);
  if (!missing.empty())
    std::cerr << "tach: the report covers " << run.results.size() << " of " << run.results.size() + missing.size()
              << " points; the rest are not in yet (tach bench --resume " << run_dir
              << " --slurm submits them once the job has ended)\n";
}

int run_report(const ReportOptions& opt) {
  const RunReport report = build_run_report(opt.run_dir);
  const std::string html = write_run_report(opt.run_dir, report);
  std::cout << "wrote " << html << " (self-contained: open it from disk in any browser)\n";
  print_slurm_state(opt.run_dir);
  if (opt.png || opt.pptx) write_figures(report, opt);
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
      "Write RUN_DIR/report.html from a bench, eval, run, train, profile or analyze directory: one self-contained "
      "page (no script, nothing fetched) with the run's header, the sweep against batch size, a metrics heatmap, "
      "latency distributions, accuracy and the confusion matrix, the profile's op tables (for tach analyze: the "
      "comparison, ops, steps, GPU time and roofline of the traces), the findings; every charted number in a table. "
      "--png also writes each chart as a PNG file, --pptx a slide deck, --pdf a printed copy");
  sub->add_option("run_dir", opt->run_dir, "The run directory (runs/<id>)")->required();
  sub->add_flag("--pdf", opt->pdf, "Also print report.pdf through headless Chromium (Debian's chromium)");
  sub->add_flag("--png", opt->png,
                "Also write each chart as RUN_DIR/plots/<name>.png, rendered from the report's SVG by librsvg: "
                "batch_size_comparison (the sweep's panels), metrics_heatmap, throughput_vs_batch_size, "
                "time_breakdown, memory_usage, roofline, and every other chart of the page");
  sub->add_option("--png-scale", opt->png_scale,
                  "Pixels per SVG unit in the PNG files (2: a 460-unit chart is 920 px wide)")
      ->check(CLI::Range(0.25, 8.0));
  sub->add_flag("--pptx", opt->pptx,
                "Also write RUN_DIR/report.pptx: a title slide with the model and machine, one slide per chart with "
                "its key numbers, and the findings (the PNG files are written too)");
  return {sub, [opt] { return run_report(*opt); }};
}

}  // namespace tach::cli
