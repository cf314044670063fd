// The parts of a PresentationML (.pptx) package that tach's slide deck is made of: the fixed
// ones (theme, master, the blank layout, properties) and builders for the shapes on a slide.
// Positions and sizes are in EMU (914400 per inch); the slide is 16:9, 13.333 × 7.5 inches.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tach::report::pptx {

constexpr int64_t kEmuPerInch = 914400;
constexpr int64_t kSlideWidth = 12192000, kSlideHeight = 6858000;

struct Box {
  int64_t x = 0, y = 0, cx = 0, cy = 0;
};

// Text for XML: the five special characters escaped, control characters XML forbids dropped.
std::string xml_text(const std::string& s);

// A text box; each line one paragraph, as bullets or not, at `points` size (bold for a title).
std::string text_box(int id, const std::string& name, const Box& box, const std::vector<std::string>& lines, int points,
                     bool bold, bool bullets);
// A picture filling `box`, its image the slide's relationship `rel_id`; `description` is its alt text.
std::string picture(int id, const std::string& description, const Box& box, const std::string& rel_id);
// A slide holding the shapes (from text_box and picture).
std::string slide_xml(const std::string& shapes);
// A slide's relationships: its layout, and its image if `image_target` is not empty.
std::string slide_rels(const std::string& image_target);

std::string content_types(int slides);
std::string package_rels();
std::string presentation_xml(int slides);
std::string presentation_rels(int slides);
std::string core_properties(const std::string& title, const std::string& created_utc);
std::string app_properties(int slides);
std::string slide_master();
std::string slide_master_rels();
std::string slide_layout();
std::string slide_layout_rels();
std::string theme();
std::string presentation_properties();
std::string view_properties();
std::string table_styles();

}  // namespace tach::report::pptx
