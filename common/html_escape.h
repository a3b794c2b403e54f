// Text for HTML and SVG markup, as the report and the simulator's plots write it. Design choice:
// whatever a log or a command line holds comes out as well-formed character data: the five
// markup characters are escaped, and bytes that are not valid UTF-8 and control characters (but
// tab and newline) become U+FFFD, so no input can inject a tag or break the document.
#pragma once
#include <string>
#include <string_view>

namespace mlbert {

// `text` as HTML/SVG character data or attribute value: & < > " ' escaped, bytes that are not
// valid UTF-8 and control characters other than tab and newline replaced by U+FFFD.
std::string escape_html(std::string_view text);

}  // namespace mlbert
