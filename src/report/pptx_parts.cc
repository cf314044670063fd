// What ECMA-376 requires of a deck, and no more: one master with one blank layout and a theme;
// every slide draws its own text boxes and picture with explicit sizes, so the deck looks the
// same in PowerPoint, LibreOffice Impress and Keynote, whatever their defaults.
#include "report/pptx_parts.h"

#include <sstream>

#include "report/svg_chart.h"

namespace tach::report::pptx {

namespace {

const char* kXmlHead = "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n";
const char* kNamespaces =
    " xmlns:a=\"http://schemas.openxmlformats.org/drawingml/2006/main\""
    " xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\""
    " xmlns:p=\"http://schemas.openxmlformats.org/presentationml/2006/main\"";
const char* kRelsNs = "http://schemas.openxmlformats.org/package/2006/relationships";
const char* kRelType = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/";

// The shape tree's own group properties, which every spTree begins with.
const char* kTreeHead =
    "<p:nvGrpSpPr><p:cNvPr id=\"1\" name=\"\"/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr><a:xfrm>"
    "<a:off x=\"0\" y=\"0\"/><a:ext cx=\"0\" cy=\"0\"/><a:chOff x=\"0\" y=\"0\"/><a:chExt cx=\"0\" cy=\"0\"/>"
    "</a:xfrm></p:grpSpPr>";

std::string xfrm(const Box& b) {
  std::ostringstream o;
  o << "<a:xfrm><a:off x=\"" << b.x << "\" y=\"" << b.y << "\"/><a:ext cx=\"" << b.cx << "\" cy=\"" << b.cy
    << "\"/></a:xfrm>";
  return o.str();
}

std::string relationship(int id, const std::string& type, const std::string& target) {
  return "<Relationship Id=\"rId" + std::to_string(id) + "\" Type=\"" + type + "\" Target=\"" + target + "\"/>";
}

}  // namespace

std::string xml_text(const std::string& s) {
  std::string allowed;  // XML 1.0 has no control characters but tab, newline and return; a text run takes tab only
  for (unsigned char c : s)
    if (c >= 0x20 || c == '\t') allowed += char(c);
  return escape_html(allowed);  // the same five escapes XML needs
}

std::string text_box(int id, const std::string& name, const Box& box, const std::vector<std::string>& lines, int points,
                     bool bold, bool bullets) {
  std::ostringstream o;
  o << "<p:sp><p:nvSpPr><p:cNvPr id=\"" << id << "\" name=\"" << xml_text(name)
    << "\"/><p:cNvSpPr txBox=\"1\"/><p:nvPr/></p:nvSpPr><p:spPr>" << xfrm(box)
    << "<a:prstGeom prst=\"rect\"><a:avLst/></a:prstGeom><a:noFill/></p:spPr>"
    // normAutofit: an application that can shrinks text that would overflow the box.
    << "<p:txBody><a:bodyPr wrap=\"square\" lIns=\"0\" rIns=\"0\" "
       "rtlCol=\"0\"><a:normAutofit/></a:bodyPr><a:lstStyle/>";
  for (const auto& line : lines) {
    o << "<a:p>";
    if (bullets)
      o << "<a:pPr marL=\"228600\" indent=\"-228600\"><a:spcBef><a:spcPts val=\"400\"/></a:spcBef>"
           "<a:buFont typeface=\"Arial\"/><a:buChar char=\"&#8226;\"/></a:pPr>";
    o << "<a:r><a:rPr lang=\"en-US\" sz=\"" << points * 100 << "\"" << (bold ? " b=\"1\"" : "")
      << " dirty=\"0\"><a:solidFill><a:srgbClr val=\"222222\"/></a:solidFill><a:latin typeface=\"DejaVu Sans\"/>"
         "</a:rPr><a:t>"
      << xml_text(line) << "</a:t></a:r></a:p>";
  }
  if (lines.empty()) o << "<a:p><a:endParaRPr lang=\"en-US\"/></a:p>";
  o << "</p:txBody></p:sp>";
  return o.str();
}

std::string picture(int id, const std::string& description, const Box& box, const std::string& rel_id) {
  std::ostringstream o;
  o << "<p:pic><p:nvPicPr><p:cNvPr id=\"" << id << "\" name=\"Picture " << id << "\" descr=\"" << xml_text(description)
    << "\"/><p:cNvPicPr><a:picLocks noChangeAspect=\"1\"/></p:cNvPicPr><p:nvPr/></p:nvPicPr><p:blipFill><a:blip "
       "r:embed=\""
    << rel_id << "\"/><a:stretch><a:fillRect/></a:stretch></p:blipFill><p:spPr>" << xfrm(box)
    << "<a:prstGeom prst=\"rect\"><a:avLst/></a:prstGeom></p:spPr></p:pic>";
  return o.str();
}

std::string slide_xml(const std::string& shapes) {
  return std::string(kXmlHead) + "<p:sld" + kNamespaces + "><p:cSld><p:spTree>" + kTreeHead + shapes +
         "</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>";
}

std::string slide_rels(const std::string& image_target) {
  std::string s = std::string(kXmlHead) + "<Relationships xmlns=\"" + kRelsNs + "\">" +
                  relationship(1, std::string(kRelType) + "slideLayout", "../slideLayouts/slideLayout1.xml");
  if (!image_target.empty()) s += relationship(2, std::string(kRelType) + "image", image_target);
  return s + "</Relationships>";
}

std::string content_types(int slides) {
  const std::string ct = "application/vnd.openxmlformats-officedocument.";
  std::ostringstream o;
  o << kXmlHead << "<Types xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">"
    << "<Default Extension=\"rels\" ContentType=\"application/vnd.openxmlformats-package.relationships+xml\"/>"
    << "<Default Extension=\"xml\" ContentType=\"application/xml\"/><Default Extension=\"png\" "
       "ContentType=\"image/png\"/>";
  auto part = [&](const std::string& name, const std::string& type) {
    o << "<Override PartName=\"" << name << "\" ContentType=\"" << type << "\"/>";
  };
  part("/ppt/presentation.xml", ct + "presentationml.presentation.main+xml");
  part("/ppt/slideMasters/slideMaster1.xml", ct + "presentationml.slideMaster+xml");
  part("/ppt/slideLayouts/slideLayout1.xml", ct + "presentationml.slideLayout+xml");
  part("/ppt/theme/theme1.xml", ct + "theme+xml");
  for (int i = 1; i <= slides; ++i)
    part("/ppt/slides/slide" + std::to_string(i) + ".xml", ct + "presentationml.slide+xml");
  part("/ppt/presProps.xml", ct + "presentationml.presProps+xml");
  part("/ppt/viewProps.xml", ct + "presentationml.viewProps+xml");
  part("/ppt/tableStyles.xml", ct + "presentationml.tableStyles+xml");
  part("/docProps/core.xml", "application/vnd.openxmlformats-package.core-properties+xml");
  part("/docProps/app.xml", ct + "extended-properties+xml");
  o << "</Types>";
  return o.str();
}

std::string package_rels() {
  return std::string(kXmlHead) + "<Relationships xmlns=\"" + kRelsNs + "\">" +
         relationship(1, std::string(kRelType) + "officeDocument", "ppt/presentation.xml") +
         relationship(2, "http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties",
                      "docProps/core.xml") +
         relationship(3, std::string(kRelType) + "extended-properties", "docProps/app.xml") + "</Relationships>";
}

// presentation.xml.rels: rId1 the master, rId2.. the slides, then the properties and the theme.
std::string presentation_rels(int slides) {
  std::ostringstream o;
  o << kXmlHead << "<Relationships xmlns=\"" << kRelsNs << "\">"
    << relationship(1, std::string(kRelType) + "slideMaster", "slideMasters/slideMaster1.xml");
  for (int i = 1; i <= slides; ++i)
    o << relationship(1 + i, std::string(kRelType) + "slide", "slides/slide" + std::to_string(i) + ".xml");
  o << relationship(slides + 2, std::string(kRelType) + "presProps", "presProps.xml")
    << relationship(slides + 3, std::string(kRelType) + "viewProps", "viewProps.xml")
    << relationship(slides + 4, std::string(kRelType) + "theme", "theme/theme1.xml")
    << relationship(slides + 5, std::string(kRelType) + "tableStyles", "tableStyles.xml") << "</Relationships>";
  return o.str();
}

std::string presentation_xml(int slides) {
  std::ostringstream o;
  o << kXmlHead << "<p:presentation" << kNamespaces << " saveSubsetFonts=\"1\">"
    << "<p:sldMasterIdLst><p:sldMasterId id=\"2147483648\" r:id=\"rId1\"/></p:sldMasterIdLst><p:sldIdLst>";
  for (int i = 1; i <= slides; ++i) o << "<p:sldId id=\"" << 255 + i << "\" r:id=\"rId" << 1 + i << "\"/>";
  o << "</p:sldIdLst><p:sldSz cx=\"" << kSlideWidth << "\" cy=\"" << kSlideHeight
    << "\"/><p:notesSz cx=\"6858000\" cy=\"9144000\"/></p:presentation>";
  return o.str();
}

std::string core_properties(const std::string& title, const std::string& created_utc) {
  return std::string(kXmlHead) +
         "<cp:coreProperties xmlns:cp=\"http://schemas.openxmlformats.org/package/2006/metadata/core-properties\" "
         "xmlns:dc=\"http://purl.org/dc/elements/1.1/\" xmlns:dcterms=\"http://purl.org/dc/terms/\" "
         "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\"><dc:title>" +
         xml_text(title) + "</dc:title><dc:creator>tach</dc:creator><dcterms:created xsi:type=\"dcterms:W3CDTF\">" +
         created_utc + "</dcterms:created></cp:coreProperties>";
}

std::string app_properties(int slides) {
  return std::string(kXmlHead) +
         "<Properties xmlns=\"http://schemas.openxmlformats.org/officeDocument/2006/extended-properties\">"
         "<Application>tach</Application><Slides>" +
         std::to_string(slides) + "</Slides></Properties>";
}

std::string slide_master() {
  return std::string(kXmlHead) + "<p:sldMaster" + kNamespaces +
         "><p:cSld><p:bg><p:bgPr><a:solidFill><a:srgbClr val=\"FFFFFF\"/></a:solidFill><a:effectLst/></p:bgPr></p:bg>"
         "<p:spTree>" +
         kTreeHead +
         "</p:spTree></p:cSld><p:clrMap bg1=\"lt1\" tx1=\"dk1\" bg2=\"lt2\" tx2=\"dk2\" accent1=\"accent1\" "
         "accent2=\"accent2\" accent3=\"accent3\" accent4=\"accent4\" accent5=\"accent5\" accent6=\"accent6\" "
         "hlink=\"hlink\" folHlink=\"folHlink\"/><p:sldLayoutIdLst><p:sldLayoutId id=\"2147483649\" r:id=\"rId1\"/>"
         "</p:sldLayoutIdLst></p:sldMaster>";
}

std::string slide_master_rels() {
  return std::string(kXmlHead) + "<Relationships xmlns=\"" + kRelsNs + "\">" +
         relationship(1, std::string(kRelType) + "slideLayout", "../slideLayouts/slideLayout1.xml") +
         relationship(2, std::string(kRelType) + "theme", "../theme/theme1.xml") + "</Relationships>";
}

std::string slide_layout() {
  return std::string(kXmlHead) + "<p:sldLayout" + kNamespaces +
         " type=\"blank\" preserve=\"1\"><p:cSld name=\"Blank\"><p:spTree>" + kTreeHead +
         "</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>";
}

std::string slide_layout_rels() {
  return std::string(kXmlHead) + "<Relationships xmlns=\"" + kRelsNs + "\">" +
         relationship(1, std::string(kRelType) + "slideMaster", "../slideMasters/slideMaster1.xml") +
         "</Relationships>";
}

// The theme: the report's palette (Okabe-Ito, as the charts) and DejaVu Sans; the format scheme
// holds the three fills, lines, effects and backgrounds the schema asks for, all plain.
std::string theme() {
  std::ostringstream o;
  auto colour = [&](const char* name, const char* rgb) {
    o << "<a:" << name << "><a:srgbClr val=\"" << rgb << "\"/></a:" << name << ">";
  };
  o << kXmlHead << "<a:theme xmlns:a=\"http://schemas.openxmlformats.org/drawingml/2006/main\" name=\"tach\">"
    << "<a:themeElements><a:clrScheme name=\"tach\">";
  colour("dk1", "222222");
  colour("lt1", "FFFFFF");
  colour("dk2", "444444");
  colour("lt2", "F5F5F5");
  colour("accent1", "0072B2");
  colour("accent2", "E69F00");
  colour("accent3", "009E73");
  colour("accent4", "CC79A7");
  colour("accent5", "56B4E9");
  colour("accent6", "D55E00");
  colour("hlink", "0072B2");
  colour("folHlink", "CC79A7");
  o << "</a:clrScheme><a:fontScheme name=\"tach\">";
  for (const char* f : {"majorFont", "minorFont"})
    o << "<a:" << f << "><a:latin typeface=\"DejaVu Sans\"/><a:ea typeface=\"\"/><a:cs typeface=\"\"/></a:" << f << ">";
  o << "</a:fontScheme><a:fmtScheme name=\"tach\"><a:fillStyleLst>";
  for (int i = 0; i < 3; ++i) o << "<a:solidFill><a:schemeClr val=\"phClr\"/></a:solidFill>";
  o << "</a:fillStyleLst><a:lnStyleLst>";
  for (int w : {6350, 12700, 19050})
    o << "<a:ln w=\"" << w << "\"><a:solidFill><a:schemeClr val=\"phClr\"/></a:solidFill></a:ln>";
  o << "</a:lnStyleLst><a:effectStyleLst>";
  for (int i = 0; i < 3; ++i) o << "<a:effectStyle><a:effectLst/></a:effectStyle>";
  o << "</a:effectStyleLst><a:bgFillStyleLst>";
  for (int i = 0; i < 3; ++i) o << "<a:solidFill><a:schemeClr val=\"phClr\"/></a:solidFill>";
  o << "</a:bgFillStyleLst></a:fmtScheme></a:themeElements><a:objectDefaults/><a:extraClrSchemeLst/></a:theme>";
  return o.str();
}

std::string presentation_properties() { return std::string(kXmlHead) + "<p:presentationPr" + kNamespaces + "/>"; }

std::string view_properties() { return std::string(kXmlHead) + "<p:viewPr" + kNamespaces + "/>"; }

std::string table_styles() {
  return std::string(kXmlHead) +
         "<a:tblStyleLst xmlns:a=\"http://schemas.openxmlformats.org/drawingml/2006/main\" "
         "def=\"{5C22544A-7EE6-4342-B048-85BDC9FD1C3A}\"/>";
}

}  // namespace tach::report::pptx
