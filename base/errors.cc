#include "base/errors.h"

#include <algorithm>

namespace placesim {

void ErrorList::Add(std::string_view path, std::string_view value, std::string_view rule) {
  std::string line(path);
  line += ": ";
  line += value;
  line += ": ";
  line += rule;
  lines_.push_back(std::move(line));
}

void ErrorList::AddLine(std::string line) { lines_.push_back(std::move(line)); }

void ErrorList::AddStatus(std::string_view path, const Status& status) {
  if (status.ok()) return;
  const std::string& m = status.message();
  size_t start = 0;
  while (start <= m.size()) {
    size_t end = m.find('\n', start);
    if (end == std::string::npos) end = m.size();
    if (end > start) {
      std::string line;
      if (!path.empty()) {
        line += path;
        line += ": ";
      }
      line += m.substr(start, end - start);
      lines_.push_back(std::move(line));
    }
    start = end + 1;
  }
}

Status ErrorList::ToStatus() const {
  if (lines_.empty()) return OkStatus();
  std::string msg;
  const size_t shown = std::min(lines_.size(), kMaxShownLines);
  for (size_t i = 0; i < shown; ++i) {
    if (i) msg += '\n';
    msg += lines_[i];
  }
  if (shown < lines_.size()) {
    msg += "\n... and " + std::to_string(lines_.size() - shown) + " more problems";
  }
  return InvalidArgumentError(std::move(msg));
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    out += names[i];
  }
  return out;
}

}  // namespace placesim
