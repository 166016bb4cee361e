// ErrorList: collects every validation problem before reporting, so a user sees all of them
// at once. Each entry is "PATH: VALUE: RULE" where RULE says what is allowed, e.g.
//   cluster.nodes: 0: must be between 1 and 65536
// Thread-safety: not thread-safe; one list per validation pass.
#ifndef PLACESIM_BASE_ERRORS_H_
#define PLACESIM_BASE_ERRORS_H_

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace placesim {

class ErrorList {
 public:
  // Adds "path: value: rule". `value` is shown as given (quote strings yourself if useful).
  void Add(std::string_view path, std::string_view value, std::string_view rule);
  // Adds a preformatted line (used to merge errors from another source).
  void AddLine(std::string line);
  // Merges a non-OK status message, prefixing each line with `path` when not empty.
  void AddStatus(std::string_view path, const Status& status);

  bool empty() const { return lines_.empty(); }
  size_t size() const { return lines_.size(); }
  const std::vector<std::string>& lines() const { return lines_; }

  // OK when empty; otherwise kInvalidArgument whose message is one problem per line: the
  // first kMaxShownLines, then "... and N more problems", so that a file with a million bad
  // entries gets a message a person can read.
  Status ToStatus() const;
  static constexpr size_t kMaxShownLines = 50;

 private:
  std::vector<std::string> lines_;
};

// Joins names as "a, b, c" — for "valid: ..." lists.
std::string JoinNames(const std::vector<std::string>& names);

}  // namespace placesim

#endif  // PLACESIM_BASE_ERRORS_H_
