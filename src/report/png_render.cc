// tach report --png: each figure's SVG rendered to a PNG by librsvg onto a cairo image surface.
// librsvg is opened at the first PNG (core/library_loader.h says why not linked).
#include <cairo.h>
#include <librsvg/rsvg.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <mutex>

#include "core/library_loader.h"

#include "model/safetensors_writer.h"
#include "tach/error.h"
#include "tach/report.h"
#include "tach/plain_number.h"

namespace tach {

namespace {

// librsvg's entry points and the cairo and GLib ones it brings, resolved at the first PNG.
struct RsvgApi {
  decltype(&rsvg_handle_new_from_data) new_from_data = nullptr;
  decltype(&rsvg_handle_get_intrinsic_size_in_pixels) intrinsic_size = nullptr;
  decltype(&rsvg_handle_render_document) render_document = nullptr;
  decltype(&g_object_unref) object_unref = nullptr;
  decltype(&g_error_free) error_free = nullptr;
  decltype(&cairo_image_surface_create) image_surface_create = nullptr;
  decltype(&cairo_surface_status) surface_status = nullptr;
  decltype(&cairo_surface_destroy) surface_destroy = nullptr;
  decltype(&cairo_surface_flush) surface_flush = nullptr;
  decltype(&cairo_surface_write_to_png_stream) write_to_png_stream = nullptr;
  decltype(&cairo_create) create = nullptr;
  decltype(&cairo_destroy) destroy = nullptr;
};

// The loaded API; throws tach::Error naming the library (or the symbols it lacks) when it is not usable.
const RsvgApi& rsvg() {
  static RsvgApi api;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    const OpenedLibrary lib =
        open_library({"librsvg-2.so.2", "", "", "PNG figures", "install Debian's librsvg2-2 (or librsvg2-dev)"});
    if (!lib.handle) {
      error = "librsvg is not available: " + lib.error;
      return;
    }
    std::string missing;
    resolve(lib.handle, api.new_from_data, "rsvg_handle_new_from_data", &missing);
    resolve(lib.handle, api.intrinsic_size, "rsvg_handle_get_intrinsic_size_in_pixels", &missing);
    resolve(lib.handle, api.render_document, "rsvg_handle_render_document", &missing);
    resolve(lib.handle, api.object_unref, "g_object_unref", &missing);
    resolve(lib.handle, api.error_free, "g_error_free", &missing);
    resolve(lib.handle, api.image_surface_create, "cairo_image_surface_create", &missing);
    resolve(lib.handle, api.surface_status, "cairo_surface_status", &missing);
    resolve(lib.handle, api.surface_destroy, "cairo_surface_destroy", &missing);
    resolve(lib.handle, api.surface_flush, "cairo_surface_flush", &missing);
    resolve(lib.handle, api.write_to_png_stream, "cairo_surface_write_to_png_stream", &missing);
    resolve(lib.handle, api.create, "cairo_create", &missing);
    resolve(lib.handle, api.destroy, "cairo_destroy", &missing);
    if (!missing.empty()) error = "librsvg is not usable: librsvg-2.so.2 and the libraries it loads lack " + missing;
  });
  if (!error.empty()) throw Error(error);
  return api;
}

cairo_status_t append_to_string(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

// The PNG bytes of an SVG document at `scale` pixels per SVG unit, and their size.
std::string render_png(const std::string& svg, double scale, const std::string& what, int& width, int& height) {
  const RsvgApi& r = rsvg();
  GError* error = nullptr;
  std::unique_ptr<RsvgHandle, void (*)(void*)> handle(
      r.new_from_data(reinterpret_cast<const guint8*>(svg.data()), svg.size(), &error), r.object_unref);
  if (!handle) {
    const std::string why = error ? error->message : "unknown";
    if (error) r.error_free(error);
    throw Error(what + ": librsvg could not read the figure's SVG (" + why + ")");
  }
  double w = 0, h = 0;
  check(r.intrinsic_size(handle.get(), &w, &h) && w > 0 && h > 0, what + ": the figure's SVG has no size in pixels");
  width = int(std::ceil(w * scale)), height = int(std::ceil(h * scale));
  std::unique_ptr<cairo_surface_t, void (*)(cairo_surface_t*)> surface(
      r.image_surface_create(CAIRO_FORMAT_ARGB32, width, height), r.surface_destroy);
  check(r.surface_status(surface.get()) == CAIRO_STATUS_SUCCESS,
        what + ": cairo could not make a " + std::to_string(width) + "x" + std::to_string(height) + " image");
  std::unique_ptr<cairo_t, void (*)(cairo_t*)> cr(r.create(surface.get()), r.destroy);
  const RsvgRectangle viewport{0, 0, double(width), double(height)};
  if (!r.render_document(handle.get(), cr.get(), &viewport, &error)) {
    const std::string why = error ? error->message : "unknown";
    if (error) r.error_free(error);
    throw Error(what + ": librsvg could not render the figure (" + why + ")");
  }
  r.surface_flush(surface.get());
  std::string png;
  check(r.write_to_png_stream(surface.get(), append_to_string, &png) == CAIRO_STATUS_SUCCESS,
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
