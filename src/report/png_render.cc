// tach report --png: each figure's SVG rendered to a PNG by librsvg onto a cairo image surface.
#include <cairo.h>
#include <librsvg/rsvg.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "model/safetensors_writer.h"
#include "tach/error.h"
#include "tach/report.h"
#include "tach/plain_number.h"

namespace tach {

namespace {

cairo_status_t append_to_string(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

// The PNG bytes of an SVG document at `scale` pixels per SVG unit, and their size.
std::string render_png(const std::string& svg, double scale, const std::string& what, int& width, int& height) {
  GError* error = nullptr;
  std::unique_ptr<RsvgHandle, void (*)(void*)> handle(
      rsvg_handle_new_from_data(reinterpret_cast<const guint8*>(svg.data()), svg.size(), &error), g_object_unref);
  if (!handle) {
    const std::string why = error ? error->message : "unknown";
    if (error) g_error_free(error);
    throw Error(what + ": librsvg could not read the figure's SVG (" + why + ")");
  }
  double w = 0, h = 0;
  check(rsvg_handle_get_intrinsic_size_in_pixels(handle.get(), &w, &h) && w > 0 && h > 0,
        what + ": the figure's SVG has no size in pixels");
  width = int(std::ceil(w * scale)), height = int(std::ceil(h * scale));
  std::unique_ptr<cairo_surface_t, void (*)(cairo_surface_t*)> surface(
      cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height), cairo_surface_destroy);
  check(cairo_surface_status(surface.get()) == CAIRO_STATUS_SUCCESS,
        what + ": cairo could not make a " + std::to_string(width) + "x" + std::to_string(height) + " image");
  std::unique_ptr<cairo_t, void (*)(cairo_t*)> cr(cairo_create(surface.get()), cairo_destroy);
  const RsvgRectangle viewport{0, 0, double(width), double(height)};
  if (!rsvg_handle_render_document(handle.get(), cr.get(), &viewport, &error)) {
    const std::string why = error ? error->message : "unknown";
    if (error) g_error_free(error);
    throw Error(what + ": librsvg could not render the figure (" + why + ")");
  }
  cairo_surface_flush(surface.get());
  std::string png;
  check(cairo_surface_write_to_png_stream(surface.get(), append_to_string, &png) == CAIRO_STATUS_SUCCESS,
        what + ": cairo could not encode the PNG");
  return png;
}

}  // namespace

std::vector<WrittenImage> write_report_pngs(const RunReport& report, const std::string& plots_dir, double scale) {
  check(scale > 0 && scale <= 8,
        "--png-scale must be above 0 and at most 8 (pixels per SVG unit); got " + plain_number(scale));
  std::filesystem::create_directories(plots_dir);
  std::vector<WrittenImage> written;
  for (const auto& figure : report.figures) {
    WrittenImage image;
    image.path = (std::filesystem::path(plots_dir) / (figure.name + ".png")).string();
    const std::string png = render_png(figure.svg, scale, image.path, image.width, image.height);
    model::write_file_atomically(image.path, png);
    written.push_back(image);
  }
  // An older report's figures that this one no longer has would pass for current ones: removed.
  for (const auto& e : std::filesystem::directory_iterator(plots_dir)) {
    const bool ours = std::any_of(written.begin(), written.end(),
                                  [&](const WrittenImage& w) { return std::filesystem::path(w.path) == e.path(); });
    if (e.path().extension() == ".png" && !ours) std::filesystem::remove(e.path());
  }
  return written;
}

}  // namespace tach
