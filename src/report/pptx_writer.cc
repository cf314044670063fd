// tach report --pptx: the report as a slide deck. A title slide (the model, the machine, the
// ceilings, the date), one slide per figure with its PNG and the numbers it shows, then the
// findings. The package is zipped by libzip and renamed into place only when complete.
#include <zip.h>

#include <algorithm>
#include <deque>
#include <filesystem>

#include "bench/bench_internal.h"
#include "model/config_fields.h"
#include "report/pptx_parts.h"
#include "tach/error.h"
#include "tach/report.h"

namespace tach {

namespace fs = std::filesystem;
namespace px = report::pptx;

namespace {

constexpr int64_t kInch = px::kEmuPerInch;
constexpr size_t kFindingsPerSlide = 14;
constexpr size_t kAboutLines = 12;

// The largest box of the image's aspect inside `area`, centred horizontally when `centre`.
px::Box fit(const px::Box& area, int width, int height, bool centre) {
  const double scale = std::min(double(area.cx) / width, double(area.cy) / height);
  px::Box b{area.x, area.y, int64_t(width * scale), int64_t(height * scale)};
  if (centre) b.x += (area.cx - b.cx) / 2;
  return b;
}

px::Box inches(double x, double y, double w, double h) {
  return {int64_t(x * kInch), int64_t(y * kInch), int64_t(w * kInch), int64_t(h * kInch)};
}

std::string title_shape(int id, const std::string& title, int points = 24) {
  return px::text_box(id, "Title", inches(0.5, 0.3, 12.33, 0.85), {title}, points, true, false);
}

// A figure's slide: wide figures (the six panels) span the slide with their numbers below; the
// others stand at the left with their numbers beside them.
std::string figure_slide(const ReportFigure& figure, const WrittenImage& png) {
  std::string shapes = title_shape(2, figure.title, 22);
  const bool numbers = !figure.key_numbers.empty();
  const bool wide = double(png.width) / png.height >= 2.0;
  px::Box area = inches(0.5, 1.25, 12.33, 5.9), text;
  if (numbers && wide) area = inches(0.5, 1.25, 12.33, 4.4), text = inches(0.5, 5.75, 12.33, 1.5);
  else if (numbers) area = inches(0.5, 1.25, 8.3, 5.9), text = inches(9.0, 1.35, 3.85, 5.8);
  shapes += px::picture(3, figure.title, fit(area, png.width, png.height, wide || !numbers), "rId2");
  if (numbers) shapes += px::text_box(4, "Key numbers", text, figure.key_numbers, wide ? 12 : 13, false, true);
  return px::slide_xml(shapes);
}

}  // namespace

int write_report_pptx(const RunReport& report, const std::vector<WrittenImage>& pngs, const std::string& path) {
  check(pngs.size() == report.figures.size(), "the deck needs one PNG per figure (" +
                                                  std::to_string(report.figures.size()) + " figures, " +
                                                  std::to_string(pngs.size()) + " PNGs)");
  // The parts, kept alive until zip_close reads them.
  std::deque<std::pair<std::string, std::string>> parts;
  std::vector<std::string> slides;
  std::vector<std::string> about(report.about.begin(),
                                 report.about.begin() + std::min(report.about.size(), kAboutLines));
  slides.push_back(
      px::slide_xml(px::text_box(2, "Title", inches(0.7, 1.4, 11.9, 1.1), {report.title}, 32, true, false) +
                    px::text_box(3, "About the run", inches(0.7, 2.7, 11.9, 4.4), about, 14, false, false)));
  for (size_t i = 0; i < report.figures.size(); ++i) slides.push_back(figure_slide(report.figures[i], pngs[i]));
  std::vector<std::string> findings = report.findings;
  if (findings.empty()) findings.push_back("This run wrote no findings (no summary.txt and no profile).");
  for (size_t at = 0; at < findings.size(); at += kFindingsPerSlide) {
    const std::vector<std::string> page(findings.begin() + at,
                                        findings.begin() + std::min(findings.size(), at + kFindingsPerSlide));
    slides.push_back(px::slide_xml(title_shape(2, at == 0 ? "Findings" : "Findings (continued)") +
                                   px::text_box(3, "Findings", inches(0.5, 1.25, 12.33, 5.9), page, 13, false, true)));
  }
  const int n = int(slides.size());
  parts.emplace_back("[Content_Types].xml", px::content_types(n));
  parts.emplace_back("_rels/.rels", px::package_rels());
  parts.emplace_back("docProps/core.xml", px::core_properties(report.title, bench::utc_now_iso()));
  parts.emplace_back("docProps/app.xml", px::app_properties(n));
  parts.emplace_back("ppt/presentation.xml", px::presentation_xml(n));
  parts.emplace_back("ppt/_rels/presentation.xml.rels", px::presentation_rels(n));
  parts.emplace_back("ppt/slideMasters/slideMaster1.xml", px::slide_master());
  parts.emplace_back("ppt/slideMasters/_rels/slideMaster1.xml.rels", px::slide_master_rels());
  parts.emplace_back("ppt/slideLayouts/slideLayout1.xml", px::slide_layout());
  parts.emplace_back("ppt/slideLayouts/_rels/slideLayout1.xml.rels", px::slide_layout_rels());
  parts.emplace_back("ppt/theme/theme1.xml", px::theme());
  parts.emplace_back("ppt/presProps.xml", px::presentation_properties());
  parts.emplace_back("ppt/viewProps.xml", px::view_properties());
  parts.emplace_back("ppt/tableStyles.xml", px::table_styles());
  for (int i = 1; i <= n; ++i) {
    // Slide 1 is the title; slides 2..figures+1 carry figure i-2's image.
    const bool figure = i >= 2 && size_t(i - 2) < report.figures.size();
    const std::string image = figure ? "image" + std::to_string(i - 1) + ".png" : "";
    parts.emplace_back("ppt/slides/slide" + std::to_string(i) + ".xml", slides[size_t(i - 1)]);
    parts.emplace_back("ppt/slides/_rels/slide" + std::to_string(i) + ".xml.rels",
                       px::slide_rels(figure ? "../media/" + image : ""));
    if (figure) parts.emplace_back("ppt/media/" + image, model::read_text_file(pngs[size_t(i - 2)].path));
  }

  const std::string tmp = path + ".tmp";
  int err = 0;
  zip_t* zip = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!zip) {
    zip_error_t e;
    zip_error_init_with_code(&e, err);
    const std::string why = zip_error_strerror(&e);
    zip_error_fini(&e);
    throw Error(tmp + ": cannot create the deck (" + why + ")");
  }
  for (const auto& [name, data] : parts) {
    zip_source_t* src = zip_source_buffer(zip, data.data(), data.size(), 0);
    const zip_int64_t index = src ? zip_file_add(zip, name.c_str(), src, ZIP_FL_ENC_UTF_8) : -1;
    if (index < 0) {
      if (src) zip_source_free(src);
      const std::string why = zip_strerror(zip);
      zip_discard(zip);
      fs::remove(tmp);
      throw Error(tmp + ": cannot add " + name + " to the deck (" + why + ")");
    }
    // PNGs are compressed already: stored, they open faster and the deck is no larger.
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".png") == 0)
      zip_set_file_compression(zip, zip_uint64_t(index), ZIP_CM_STORE, 0);
  }
  if (zip_close(zip) != 0) {
    const std::string why = zip_strerror(zip);
    zip_discard(zip);
    fs::remove(tmp);
    throw Error(path + ": writing the deck failed (" + why + "); nothing was put in its place");
  }
  fs::rename(tmp, path);
  return n;
}

}  // namespace tach
