// Text from a file shown on a terminal or in a message: control bytes as visible escapes.
//
// Design choice: only the C0 controls and DEL are escaped (as \x00 .. \x1f, \x7f); everything
// else, backslashes and UTF-8 included, is shown as it is in the file, so a record reads the same
// on the screen as in an editor, and a NUL, an escape sequence or a carriage return in a
// crash-padded or hostile log can neither cut the output nor drive the terminal.
#pragma once

#include <string>
#include <string_view>

namespace mlbert::text {

std::string visible(std::string_view bytes);

}  // namespace mlbert::text
