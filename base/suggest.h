// "Did you mean" for names a user typed: the edit distance between two strings and the
// closest of a set of valid names, so that every "unknown X; valid: ..." message in the
// project can also point at the likely intended one. Comparison ignores ASCII case (a name
// that differs only in case is distance 0), so `FSDP` suggests `fsdp`.
// Thread-safety: stateless functions.
#ifndef PLACESIM_BASE_SUGGEST_H_
#define PLACESIM_BASE_SUGGEST_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace placesim {

// The optimal-string-alignment Damerau-Levenshtein distance: the fewest insertions,
// deletions, substitutions and swaps of two adjacent characters that turn `a` into `b`
// (no substring edited twice). Compares ASCII letters case-insensitively.
// Complexity: O(|a| * |b|) time, O(|b|) memory.
int EditDistance(std::string_view a, std::string_view b);

// The largest distance still worth suggesting for a name of `length` characters: 1 up to 4
// characters, 2 up to 8, 3 beyond. Short names tolerate less so that `tp` does not suggest
// `pp`-like unrelated names on every keystroke.
int SuggestionThreshold(size_t length);

// The valid name closest to `typed` within SuggestionThreshold(typed.size()); among equally
// close ones the one nearest in length (a typo more often replaces a letter than drops one:
// `nodez` suggests `nodes`, not `node`), then the first in `valid` order. Nothing when none
// is close enough or `typed` is itself valid (exactly).
std::optional<std::string> ClosestName(std::string_view typed,
                                       const std::vector<std::string>& valid);

// `; did you mean "NAME"?` for the closest name, or "" when there is none: appended to an
// "unknown ...; valid: ..." message.
std::string DidYouMean(std::string_view typed, const std::vector<std::string>& valid);

// The one name in `valid` equal to `typed` ignoring ASCII case; nothing when there is none
// or more than one (an ambiguous case variant must be refused, not guessed).
std::optional<std::string> UniqueCaseInsensitiveMatch(std::string_view typed,
                                                      const std::vector<std::string>& valid);

}  // namespace placesim

#endif  // PLACESIM_BASE_SUGGEST_H_
