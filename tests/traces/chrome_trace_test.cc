#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "traces/chrome_trace_validator.h"
#include "traces/chrome_trace_writer.h"

namespace placesim::traces {
namespace {

std::string Json(std::string_view s) {
  std::string out;
  AppendJsonString(out, s);
  return out;
}

std::string Us(int64_t ps) {
  std::string out;
  AppendMicroseconds(out, ps);
  return out;
}

TEST(ChromeTrace, MicrosecondsKeepEveryPicosecond) {
  EXPECT_EQ(Us(0), "0.000000");
  EXPECT_EQ(Us(1), "0.000001");
  EXPECT_EQ(Us(999999), "0.999999");
  EXPECT_EQ(Us(1000000), "1.000000");
  EXPECT_EQ(Us(1234567), "1.234567");
  EXPECT_EQ(Us(-1), "-0.000001");
  // 1 hour + 1 ps: 3.6e15 ps, beyond where ps * 1e-6 in double would still print exactly.
  EXPECT_EQ(Us(3'600'000'000'000'001), "3600000000.000001");
  EXPECT_EQ(Us(INT64_MAX), "9223372036854.775807");
  EXPECT_EQ(Us(INT64_MIN), "-9223372036854.775808");
}

TEST(ChromeTrace, DoublesAreShortestRoundTripAndNeverInvalidJson) {
  std::string out;
  AppendJsonDouble(out, 0.1);
  out += ' ';
  AppendJsonDouble(out, 1e21);
  out += ' ';
  AppendJsonDouble(out, 2.5);
  out += ' ';
  AppendJsonDouble(out, std::nan(""));
  out += ' ';
  AppendJsonDouble(out, -INFINITY);
  EXPECT_EQ(out, "0.1 1e+21 2.5 null null");
}

TEST(ChromeTrace, EscapesHostileNames) {
  EXPECT_EQ(Json("plain"), "\"plain\"");
  EXPECT_EQ(Json("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(Json("\n\r\t\b\f"), "\"\\n\\r\\t\\b\\f\"");
  EXPECT_EQ(Json(std::string_view("\x00\x01\x1f", 3)), "\"\\u0000\\u0001\\u001f\"");
  EXPECT_EQ(Json("</script>"), "\"</script>\"");
  // Valid UTF-8 passes through unchanged: é (2 bytes), € (3), 😀 (4).
  EXPECT_EQ(Json("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"),
            "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"");
}

TEST(ChromeTrace, InvalidUtf8BecomesReplacementCharacters) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(Json("\xFF"), "\"" + r + "\"");                          // never valid
  EXPECT_EQ(Json("a\x80z"), "\"a" + r + "z\"");                      // stray continuation byte
  EXPECT_EQ(Json("\xC0\xAF"), "\"" + r + r + "\"");                  // overlong '/': two bad bytes
  EXPECT_EQ(Json("\xED\xA0\x80"), "\"" + r + r + r + "\"");          // a UTF-16 surrogate
  EXPECT_EQ(Json("\xF4\x90\x80\x80"), "\"" + r + r + r + r + "\"");  // past U+10FFFF
  // A truncated 3-byte sequence is one maximal invalid subpart, then the next byte afresh.
  EXPECT_EQ(Json("\xE2\x82z"), "\"" + r + "z\"");
  EXPECT_EQ(Json("\xE2\x82"), "\"" + r + "\"");
  EXPECT_EQ(Json("\xF0\x9F\x98"), "\"" + r + "\"");
  // Every output parses as JSON.
  for (std::string s : {"\xFF\xFE", "\xC3", "\x80\x80", "ok\xE2\x82\xAC"}) {
    auto parsed = nlohmann::json::parse(Json(s), nullptr, false);
    EXPECT_FALSE(parsed.is_discarded()) << Json(s);
  }
}

void WriteSmallTrace(std::ostream& out) {
  ChromeTraceWriter w(out);
  w.ProcessName(0, "GPU 0", 0);
  w.ThreadName(0, 1, "compute", 1);
  w.ThreadName(0, 2, "comm \"nccl\"", 2);
  std::vector<TraceArg> args = {
      {"flops", int64_t{123456789}}, {"layer", "decoder.3"}, {"efficiency", 0.75}};
  w.Complete(0, 1, "fwd\tlayer 3", "compute", Picoseconds(1), Microseconds(2), args);
  w.Complete(0, 1, "bwd", "compute", Picoseconds(1) + Microseconds(2), Microseconds(3));
  w.FlowBegin(0, 1, "grad", "dep", 42, Microseconds(4));
  w.Complete(0, 2, "all-reduce \xFF", "comm", Microseconds(5), Microseconds(1));
  w.FlowEnd(0, 2, "grad", "dep", 42, Microseconds(5));
  std::vector<TraceArg> mem = {{"params", int64_t{2'000'000'000}}, {"activations", 1.5e9}};
  w.Counter(0, "memory", Microseconds(0), mem);
  w.Instant(0, 1, "step end", "marker", Microseconds(6));
  ASSERT_TRUE(w.Finish().ok());
}

TEST(ChromeTrace, SmallTraceValidates) {
  std::ostringstream out;
  WriteSmallTrace(out);
  auto summary = ValidateChromeTrace(out.str());
  ASSERT_TRUE(summary.ok()) << summary.status().ToString() << "\n" << out.str();
  EXPECT_EQ(summary->complete_events, 3u);
  EXPECT_EQ(summary->counter_events, 1u);
  EXPECT_EQ(summary->flow_events, 2u);
  EXPECT_EQ(summary->metadata_events, 6u);
  EXPECT_EQ(summary->threads, 2u);

  auto doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["displayTimeUnit"], "ns");
  const auto& first = doc["traceEvents"][6];
  EXPECT_EQ(first["ph"], "X");
  EXPECT_EQ(first["name"], "fwd\tlayer 3");
  EXPECT_EQ(first["args"]["flops"], 123456789);
  EXPECT_EQ(first["args"]["layer"], "decoder.3");
  EXPECT_EQ(doc["traceEvents"][4]["args"]["name"], "comm \"nccl\"");
  // The raw text carries the exact timestamp.
  EXPECT_NE(out.str().find("\"ts\":0.000001,\"dur\":2.000000"), std::string::npos);
  EXPECT_NE(out.str().find("\"bp\":\"e\""), std::string::npos);
}

TEST(ChromeTrace, OutputIsByteIdenticalAcrossRuns) {
  std::ostringstream a, b;
  WriteSmallTrace(a);
  WriteSmallTrace(b);
  EXPECT_EQ(a.str(), b.str());
}

TEST(ChromeTrace, EmptyTraceIsValid) {
  std::ostringstream out;
  { ChromeTraceWriter w(out); }  // the destructor finishes the document
  EXPECT_EQ(out.str(), "{\"traceEvents\":[\n],\"displayTimeUnit\":\"ns\"}\n");
  EXPECT_TRUE(ValidateChromeTrace(out.str()).ok());
}

TEST(ChromeTrace, LargeTraceStreamsAndValidates) {
  // 100,000 back-to-back slices (each ends exactly where the next starts) on 4 threads.
  std::ostringstream out;
  ChromeTraceWriter w(out);
  for (int i = 0; i < 100000; ++i) {
    w.Complete(0, i % 4, "op", "c", Picoseconds(1234567) * (i / 4), Picoseconds(1234567));
  }
  ASSERT_TRUE(w.Finish().ok());
  auto summary = ValidateChromeTrace(out.str());
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->complete_events, 100000u);
}

TEST(ChromeTraceValidator, DetectsOverlappingSlicesOnOneThread) {
  std::ostringstream out;
  {
    ChromeTraceWriter w(out);
    // [0, 10) and [5, 15) us on (0, 1) overlap; the same times on (0, 2) and (1, 1) do not
    // conflict with them.
    w.Complete(0, 1, "a", "c", Microseconds(0), Microseconds(10));
    w.Complete(0, 1, "b", "c", Microseconds(5), Microseconds(10));
    w.Complete(0, 2, "c", "c", Microseconds(5), Microseconds(10));
    w.Complete(1, 1, "d", "c", Microseconds(5), Microseconds(10));
  }
  auto summary = ValidateChromeTrace(out.str());
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().message(),
            "traceEvents[1].ts: 5000000 ps: overlaps traceEvents[0] ([0, 10000000) ps) on the "
            "same pid/tid");
}

TEST(ChromeTraceValidator, NestingIsAnOption) {
  std::ostringstream out;
  {
    ChromeTraceWriter w(out);
    w.Complete(0, 1, "outer", "c", Microseconds(0), Microseconds(10));
    w.Complete(0, 1, "inner", "c", Microseconds(2), Microseconds(3));
  }
  EXPECT_FALSE(ValidateChromeTrace(out.str()).ok());
  TraceValidationOptions nesting;
  nesting.allow_nesting = true;
  EXPECT_TRUE(ValidateChromeTrace(out.str(), nesting).ok());
}

TEST(ChromeTraceValidator, ReportsEveryProblemAtOnce) {
  const std::string doc = R"({"traceEvents":[
    {"ph":"X","pid":0,"tid":0,"ts":0,"dur":-1,"name":"neg"},
    {"ph":"X","pid":0,"tid":0,"ts":0,"dur":1},
    {"ph":"C","pid":0,"ts":0,"name":"memory","args":{"params":-5}},
    {"ph":"f","pid":0,"tid":0,"ts":0,"name":"arrow","cat":"dep","id":9,"bp":"e"}
  ]})";
  auto summary = ValidateChromeTrace(doc);
  ASSERT_FALSE(summary.ok());
  const std::string& m = summary.status().message();
  EXPECT_NE(m.find("traceEvents[0].dur: -1: must be a number >= 0"), std::string::npos) << m;
  EXPECT_NE(m.find("traceEvents[1].name: missing: must be a non-empty string"), std::string::npos)
      << m;
  EXPECT_NE(m.find("traceEvents[2].args.params: -5: counter values must be >= 0"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("traceEvents[3].id: dep/arrow/9: flow ends without a matching begin"),
            std::string::npos)
      << m;
}

TEST(ChromeTraceValidator, RejectsWhatIsNotATrace) {
  EXPECT_EQ(ValidateChromeTrace("{\"traceEvents\":[").status().message(),
            "chrome trace: not valid JSON");
  EXPECT_FALSE(ValidateChromeTrace("[]").ok());
}

}  // namespace
}  // namespace placesim::traces
