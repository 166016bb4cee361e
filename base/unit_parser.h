// The one strict parser for quantities written with their unit, as users write them in
// scenario files and on the command line:
//   ParseBytes("80 GiB"), ParseBytes("141 GB")
//   ParseBandwidth("900 GB/s"), ParseBandwidth("400 Gb/s"), ParseBandwidth("400 Gbps")
//   ParseDuration("5 us"), ParseFlopRate("989 TFLOP/s")
//
// Grammar: NUMBER [spaces] UNIT, where NUMBER is a non-negative decimal with an optional
// fraction and exponent ("1.5", "2e3"). The unit is required. Case carries meaning ("B" is a
// byte, "b" a bit; "M" is mega, "m" milli), so a unit written in another case is accepted
// only when it is unambiguous: exactly one accepted unit equals it ignoring case, and every
// "b"/"B" keeps its case. So "100 gbps" is 100 Gbps (bits: "bps" is only ever bits),
// "5 MS" is 5 ms and "989 tflops" is 989 TFLOPS, but "80 gb" (GB or Gb?), "100 gb/s"
// (GB/s or Gb/s?) and "1 gib/s" (the only match, GiB/s, would turn the bit "b" into a
// byte) are refused with the alternatives. SI prefixes
// (K, M, G, T, P) are powers of 1000, IEC prefixes (Ki, Mi, Gi, Ti, Pi) powers of 1024.
// Bits convert to bytes by dividing by 8; a byte count must come out whole.
// Errors name the input and list the accepted units. No exceptions, no locale dependence.
#ifndef PLACESIM_BASE_UNIT_PARSER_H_
#define PLACESIM_BASE_UNIT_PARSER_H_

#include <string_view>

#include "base/status.h"
#include "base/units.h"

namespace placesim {

StatusOr<Bytes> ParseBytes(std::string_view text);
StatusOr<Bandwidth> ParseBandwidth(std::string_view text);
StatusOr<Duration> ParseDuration(std::string_view text);
StatusOr<FlopRate> ParseFlopRate(std::string_view text);

}  // namespace placesim

#endif  // PLACESIM_BASE_UNIT_PARSER_H_
