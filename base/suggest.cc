#include "base/suggest.h"

#include <fmt/format.h>

#include <algorithm>

namespace placesim {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

int EditDistance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic-programming table: the swap rule looks two rows back.
  const size_t n = b.size();
  std::vector<int> before(n + 1), previous(n + 1), current(n + 1);
  for (size_t j = 0; j <= n; ++j) previous[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = static_cast<int>(i);
    for (size_t j = 1; j <= n; ++j) {
      int cost = Lower(a[i - 1]) == Lower(b[j - 1]) ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && Lower(a[i - 1]) == Lower(b[j - 2]) &&
          Lower(a[i - 2]) == Lower(b[j - 1])) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[n];
}

int SuggestionThreshold(size_t length) {
  if (length <= 4) return 1;
  if (length <= 8) return 2;
  return 3;
}

std::optional<std::string> ClosestName(std::string_view typed,
                                       const std::vector<std::string>& valid) {
  if (std::find(valid.begin(), valid.end(), typed) != valid.end()) return std::nullopt;
  const int threshold = SuggestionThreshold(typed.size());
  std::optional<std::string> best;
  int best_distance = threshold + 1;
  size_t best_length_gap = 0;
  for (const std::string& name : valid) {
    const int d = EditDistance(typed, name);
    const size_t gap =
        name.size() > typed.size() ? name.size() - typed.size() : typed.size() - name.size();
    if (d < best_distance || (d == best_distance && gap < best_length_gap)) {
      best_distance = d;
      best_length_gap = gap;
      best = name;
    }
  }
  return best;
}

std::string DidYouMean(std::string_view typed, const std::vector<std::string>& valid) {
  std::optional<std::string> closest = ClosestName(typed, valid);
  return closest ? fmt::format("; did you mean \"{}\"?", *closest) : std::string();
}

std::optional<std::string> UniqueCaseInsensitiveMatch(std::string_view typed,
                                                      const std::vector<std::string>& valid) {
  std::optional<std::string> match;
  for (const std::string& name : valid) {
    if (name.size() != typed.size()) continue;
    if (!std::equal(name.begin(), name.end(), typed.begin(),
                    [](char x, char y) { return Lower(x) == Lower(y); })) {
      continue;
    }
    if (match) return std::nullopt;
    match = name;
  }
  return match;
}

}  // namespace placesim
