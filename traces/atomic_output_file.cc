// AtomicOutputFile: a temporary created exclusively next to the target, renamed over it on
// Commit (see atomic_output_file.h). The error messages are those `placesim` has always given
// for its output files.
#include "traces/atomic_output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "base/check.h"

namespace placesim::traces {
namespace {

// Names tried before giving up on a folder full of leftovers.
constexpr int kMaxTemporaryAttempts = 100;

// Bytes buffered between writes: large enough that a streamed trace costs few system calls.
constexpr size_t kBufferBytes = 1 << 16;

// Links followed before calling the chain a loop (Linux's own limit, MAXSYMLINKS).
constexpr int kMaxSymlinkHops = 40;

// The file `path` finally names, following every symlink (relative links resolve against the
// folder holding the link), so that the rename replaces the target and keeps the link. A
// dangling link resolves to the file it would create.
StatusOr<std::string> ResolveSymlinks(const std::string& path) {
  std::filesystem::path current = path;
  for (int hops = 0; hops < kMaxSymlinkHops; ++hops) {
    std::error_code ec;
    if (!std::filesystem::is_symlink(std::filesystem::symlink_status(current, ec))) {
      return current.string();
    }
    const std::filesystem::path link = std::filesystem::read_symlink(current, ec);
    if (ec) {
      return InvalidArgumentError(fmt::format("cannot write \"{}\": {}", path, ec.message()));
    }
    current = link.is_absolute() ? link : current.parent_path() / link;
  }
  return InvalidArgumentError(
      fmt::format("cannot write \"{}\": too many levels of symbolic links", path));
}

}  // namespace

StatusOr<std::unique_ptr<AtomicOutputFile>> AtomicOutputFile::Create(const std::string& path) {
  // A directory would only fail at the rename, after the whole content was written next to it;
  // say what is wrong up front instead.
  std::error_code probe;
  if (std::filesystem::is_directory(path, probe)) {
    return InvalidArgumentError(fmt::format("cannot write \"{}\": it is a directory", path));
  }
  ASSIGN_OR_RETURN(const std::string target, ResolveSymlinks(path));
  // A device or a FIFO cannot be replaced atomically, and renaming over it would destroy it
  // (as root, /dev/full became a regular file): stream into it instead.
  const std::filesystem::file_status kind = std::filesystem::status(target, probe);
  if (std::filesystem::exists(kind) && !std::filesystem::is_regular_file(kind)) {
    // No O_CREAT: it exists; opening a FIFO blocks until it has a reader, as for any writer.
    const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      return InvalidArgumentError(
          fmt::format("cannot write \"{}\": {}", path, std::strerror(errno)));
    }
    return std::unique_ptr<AtomicOutputFile>(new AtomicOutputFile(path, target, "", fd));
  }
  // O_EXCL gives this object a name no other writer holds (another thread or process writing the
  // same target gets the next one); 0666 lets the umask decide the permissions, as for any file
  // the program creates.
  const long pid = static_cast<long>(::getpid());
  std::string temp;
  int fd = -1;
  int error = 0;
  for (int n = 0; n < kMaxTemporaryAttempts && fd < 0; ++n) {
    temp = fmt::format("{}.{}.{}.tmp", target, pid, n);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    error = errno;
    if (fd < 0 && error != EEXIST) break;
  }
  if (fd < 0) {
    return InvalidArgumentError(fmt::format("cannot write \"{}\": cannot create \"{}\": {}", path,
                                            temp, std::strerror(error)));
  }
  return std::unique_ptr<AtomicOutputFile>(new AtomicOutputFile(path, target, std::move(temp), fd));
}

AtomicOutputFile::AtomicOutputFile(std::string path, std::string target, std::string temp_path,
                                   int fd)
    : path_(std::move(path)),
      target_(std::move(target)),
      temp_path_(std::move(temp_path)),
      buffer_(fd),
      out_(&buffer_) {}

AtomicOutputFile::FdBuffer::FdBuffer(int fd) : fd_(fd), buffer_(kBufferBytes) {
  setp(buffer_.data(), buffer_.data() + buffer_.size());
}

AtomicOutputFile::FdBuffer::int_type AtomicOutputFile::FdBuffer::overflow(int_type c) {
  if (!Drain()) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

bool AtomicOutputFile::FdBuffer::Drain() {
  const char* p = pbase();
  while (error_ == 0 && fd_ >= 0 && p < pptr()) {
    const ssize_t n = ::write(fd_, p, static_cast<size_t>(pptr() - p));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = n < 0 ? errno : EIO;
      break;
    }
    p += n;
  }
  // What could not be written is dropped: the stream has failed and Commit() will say so.
  setp(buffer_.data(), buffer_.data() + buffer_.size());
  return error_ == 0 && fd_ >= 0;
}

bool AtomicOutputFile::FdBuffer::Close() {
  if (fd_ < 0) return error_ == 0;
  Drain();
  if (::close(fd_) != 0 && error_ == 0) error_ = errno;
  fd_ = -1;
  return error_ == 0;
}

AtomicOutputFile::~AtomicOutputFile() {
  if (!committed_) RemoveTemporary();
}

void AtomicOutputFile::RemoveTemporary() {
  buffer_.Close();
  if (streaming()) return;  // nothing of ours to remove; the device or FIFO stays
  std::error_code ignored;
  std::filesystem::remove(temp_path_, ignored);
}

Status AtomicOutputFile::WriteStatus() const {
  if (buffer_.error() == 0 && !out_.fail()) return OkStatus();
  // The first failed write's errno (ENOSPC, EIO, EPIPE); a stream failed by other means (a
  // formatting error, a badbit set by the writer) has none.
  const std::string reason = buffer_.error() != 0 ? std::strerror(buffer_.error()) : "write error";
  return InvalidArgumentError(fmt::format("failed writing \"{}\": {}", path_, reason));
}

Status AtomicOutputFile::Commit() {
  PLACESIM_CHECK(!committed_);
  out_.flush();
  const bool closed = buffer_.Close();
  if (!closed || out_.fail()) {
    const Status failed = WriteStatus();
    RemoveTemporary();
    return failed;
  }
  if (streaming()) {
    committed_ = true;
    return OkStatus();
  }
  std::error_code ec;
  std::filesystem::rename(temp_path_, target_, ec);
  if (ec) {
    // The removal's outcome must not replace the rename's reason.
    RemoveTemporary();
    return InvalidArgumentError(fmt::format("cannot write \"{}\": {}", path_, ec.message()));
  }
  committed_ = true;
  return OkStatus();
}

}  // namespace placesim::traces
