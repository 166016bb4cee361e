// ChromeTraceWriter: JSON emission by hand — escaping, integer-exact timestamps, locale-free
// numbers — into a bounded buffer flushed to the stream (see chrome_trace_writer.h).
#include "traces/chrome_trace_writer.h"

#include <charconv>
#include <cmath>

#include "base/check.h"

namespace placesim::traces {
namespace {

constexpr size_t kFlushThreshold = 64 * 1024;
constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

void AppendInt(std::string& out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}

void AppendUint(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}

bool NeedsEscape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80; }

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // Copy the longest run of bytes that need no attention in one go.
    size_t run = i;
    while (run < n && !NeedsEscape(static_cast<unsigned char>(s[run]))) ++run;
    out.append(s.data() + i, run - i);
    i = run;
    if (i >= n) break;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out.append("\\\"");
          break;
        case '\\':
          out.append("\\\\");
          break;
        case '\b':
          out.append("\\b");
          break;
        case '\f':
          out.append("\\f");
          break;
        case '\n':
          out.append("\\n");
          break;
        case '\r':
          out.append("\\r");
          break;
        case '\t':
          out.append("\\t");
          break;
        default:
          out.append("\\u00");
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xf]);
      }
      ++i;
      continue;
    }
    // A multi-byte sequence: the lead byte fixes the length and the range of the first
    // continuation byte (which excludes overlong forms, surrogates and code points past
    // U+10FFFF); the rest must be 0x80..0xBF.
    int need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c == 0xE0) {
      need = 2, lo = 0xA0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      need = 2;
    } else if (c == 0xED) {
      need = 2, hi = 0x9F;
    } else if (c == 0xF0) {
      need = 3, lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3) {
      need = 3;
    } else if (c == 0xF4) {
      need = 3, hi = 0x8F;
    } else {  // 0x80..0xC1 and 0xF5..0xFF never start a sequence
      out.append(kReplacement);
      ++i;
      continue;
    }
    size_t j = i + 1;
    bool valid = true;
    for (int k = 0; k < need; ++k, ++j) {
      if (j >= n) {
        valid = false;
        break;
      }
      unsigned char b = static_cast<unsigned char>(s[j]);
      if (b < lo || b > hi) {
        valid = false;
        break;
      }
      lo = 0x80;
      hi = 0xBF;
    }
    if (valid) {
      out.append(s.data() + i, j - i);
    } else {
      // The maximal invalid prefix [i, j) becomes one U+FFFD; s[j] is examined afresh.
      out.append(kReplacement);
    }
    i = j;
  }
  out.push_back('"');
}

void AppendMicroseconds(std::string& out, int64_t ps) {
  uint64_t mag = ps < 0 ? 0 - static_cast<uint64_t>(ps) : static_cast<uint64_t>(ps);
  if (ps < 0) out.push_back('-');
  AppendUint(out, mag / 1'000'000);
  char frac[7] = {'.', '0', '0', '0', '0', '0', '0'};
  uint64_t f = mag % 1'000'000;
  for (int k = 6; k >= 1; --k, f /= 10) frac[k] = static_cast<char>('0' + f % 10);
  out.append(frac, 7);
}

void AppendJsonDouble(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out.append("null");
    return;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, r.ptr);
}

ChromeTraceWriter::ChromeTraceWriter(std::ostream& out) : out_(out) {
  buffer_.reserve(kFlushThreshold + 4096);
  buffer_.append("{\"traceEvents\":[");
}

ChromeTraceWriter::~ChromeTraceWriter() {
  if (!finished_) (void)Finish();
}

void ChromeTraceWriter::Key(std::string_view key) {
  AppendJsonString(buffer_, key);
  buffer_.push_back(':');
}

void ChromeTraceWriter::BeginEvent(char phase, uint32_t pid, uint32_t tid, std::string_view name) {
  PLACESIM_CHECK(!finished_);
  buffer_.append(events_ == 0 ? "\n{\"ph\":\"" : ",\n{\"ph\":\"");
  buffer_.push_back(phase);
  buffer_.append("\",\"pid\":");
  AppendUint(buffer_, pid);
  buffer_.append(",\"tid\":");
  AppendUint(buffer_, tid);
  buffer_.append(",\"name\":");
  AppendJsonString(buffer_, name);
  ++events_;
}

void ChromeTraceWriter::EndEvent() {
  buffer_.push_back('}');
  FlushIfFull();
}

void ChromeTraceWriter::Args(std::span<const TraceArg> args) {
  buffer_.append(",\"args\":{");
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) buffer_.push_back(',');
    Key(args[i].key);
    switch (args[i].type) {
      case TraceArg::Type::kString:
        AppendJsonString(buffer_, args[i].str);
        break;
      case TraceArg::Type::kInt:
        AppendInt(buffer_, args[i].i);
        break;
      case TraceArg::Type::kDouble:
        AppendJsonDouble(buffer_, args[i].d);
        break;
    }
  }
  buffer_.push_back('}');
}

void ChromeTraceWriter::ProcessName(uint32_t pid, std::string_view name, int64_t sort_index) {
  BeginEvent('M', pid, 0, "process_name");
  const TraceArg name_arg("name", name);
  Args({&name_arg, 1});
  EndEvent();
  BeginEvent('M', pid, 0, "process_sort_index");
  const TraceArg sort_arg("sort_index", sort_index);
  Args({&sort_arg, 1});
  EndEvent();
}

void ChromeTraceWriter::ThreadName(uint32_t pid, uint32_t tid, std::string_view name,
                                   int64_t sort_index) {
  BeginEvent('M', pid, tid, "thread_name");
  const TraceArg name_arg("name", name);
  Args({&name_arg, 1});
  EndEvent();
  BeginEvent('M', pid, tid, "thread_sort_index");
  const TraceArg sort_arg("sort_index", sort_index);
  Args({&sort_arg, 1});
  EndEvent();
}

void ChromeTraceWriter::Complete(uint32_t pid, uint32_t tid, std::string_view name,
                                 std::string_view category, Duration start, Duration duration,
                                 std::span<const TraceArg> args) {
  PLACESIM_DCHECK(duration >= Duration::Zero());
  BeginEvent('X', pid, tid, name);
  buffer_.append(",\"cat\":");
  AppendJsonString(buffer_, category);
  buffer_.append(",\"ts\":");
  AppendMicroseconds(buffer_, start.picoseconds());
  buffer_.append(",\"dur\":");
  AppendMicroseconds(buffer_, duration.picoseconds());
  if (!args.empty()) Args(args);
  EndEvent();
}

void ChromeTraceWriter::Instant(uint32_t pid, uint32_t tid, std::string_view name,
                                std::string_view category, Duration at,
                                std::span<const TraceArg> args) {
  BeginEvent('i', pid, tid, name);
  buffer_.append(",\"cat\":");
  AppendJsonString(buffer_, category);
  buffer_.append(",\"ts\":");
  AppendMicroseconds(buffer_, at.picoseconds());
  buffer_.append(",\"s\":\"t\"");
  if (!args.empty()) Args(args);
  EndEvent();
}

void ChromeTraceWriter::Counter(uint32_t pid, std::string_view name, Duration at,
                                std::span<const TraceArg> series) {
  BeginEvent('C', pid, 0, name);
  buffer_.append(",\"ts\":");
  AppendMicroseconds(buffer_, at.picoseconds());
  for (const TraceArg& s : series) PLACESIM_DCHECK(s.type != TraceArg::Type::kString);
  Args(series);
  EndEvent();
}

void ChromeTraceWriter::FlowBegin(uint32_t pid, uint32_t tid, std::string_view name,
                                  std::string_view category, uint64_t id, Duration at) {
  BeginEvent('s', pid, tid, name);
  buffer_.append(",\"cat\":");
  AppendJsonString(buffer_, category);
  buffer_.append(",\"id\":");
  AppendUint(buffer_, id);
  buffer_.append(",\"ts\":");
  AppendMicroseconds(buffer_, at.picoseconds());
  EndEvent();
}

void ChromeTraceWriter::FlowEnd(uint32_t pid, uint32_t tid, std::string_view name,
                                std::string_view category, uint64_t id, Duration at) {
  BeginEvent('f', pid, tid, name);
  buffer_.append(",\"cat\":");
  AppendJsonString(buffer_, category);
  buffer_.append(",\"id\":");
  AppendUint(buffer_, id);
  buffer_.append(",\"ts\":");
  AppendMicroseconds(buffer_, at.picoseconds());
  buffer_.append(",\"bp\":\"e\"");
  EndEvent();
}

void ChromeTraceWriter::FlushIfFull() {
  if (buffer_.size() >= kFlushThreshold) Flush();
}

void ChromeTraceWriter::Flush() {
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  buffer_.clear();
}

Status ChromeTraceWriter::Finish() {
  if (!finished_) {
    finished_ = true;
    buffer_.append("\n],\"displayTimeUnit\":\"ns\"}\n");
    Flush();
    out_.flush();
  }
  if (!out_.good())
    return FailedPreconditionError("chrome trace: writing to the output stream failed");
  return OkStatus();
}

}  // namespace placesim::traces
