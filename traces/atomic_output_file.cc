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

}  // namespace

StatusOr<std::unique_ptr<AtomicOutputFile>> AtomicOutputFile::Create(const std::string& path) {
  // A directory would only fail at the rename, after the whole content was written next to it;
  // say what is wrong up front instead.
  std::error_code probe;
  if (std::filesystem::is_directory(path, probe)) {
    return InvalidArgumentError(fmt::format("cannot write \"{}\": it is a directory", path));
  }
  // O_EXCL gives this object a name no other writer holds (another thread or process writing the
  // same target gets the next one); 0666 lets the umask decide the permissions, as for any file
  // the program creates.
  const long pid = static_cast<long>(::getpid());
  std::string temp;
  int fd = -1;
  int error = 0;
  for (int n = 0; n < kMaxTemporaryAttempts && fd < 0; ++n) {
    temp = fmt::format("{}.{}.{}.tmp", path, pid, n);
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    error = errno;
    if (fd < 0 && error != EEXIST) break;
  }
  if (fd < 0) {
    return InvalidArgumentError(fmt::format("cannot write \"{}\": cannot create \"{}\": {}", path,
                                            temp, std::strerror(error)));
  }
  ::close(fd);
  std::unique_ptr<AtomicOutputFile> file(new AtomicOutputFile(path, std::move(temp)));
  if (!file->out_) {
    return InvalidArgumentError(
        fmt::format("cannot write \"{}\": cannot open \"{}\"", path, file->temp_path_));
  }
  return file;
}

AtomicOutputFile::AtomicOutputFile(std::string path, std::string temp_path)
    : path_(std::move(path)),
      temp_path_(std::move(temp_path)),
      out_(temp_path_, std::ios::binary | std::ios::trunc) {}

AtomicOutputFile::~AtomicOutputFile() {
  if (!committed_) RemoveTemporary();
}

void AtomicOutputFile::RemoveTemporary() {
  if (out_.is_open()) out_.close();
  std::error_code ignored;
  std::filesystem::remove(temp_path_, ignored);
}

Status AtomicOutputFile::Commit() {
  PLACESIM_CHECK(!committed_);
  out_.flush();
  out_.close();
  if (out_.fail()) {
    RemoveTemporary();
    return InvalidArgumentError(fmt::format("failed writing \"{}\"", temp_path_));
  }
  std::error_code ec;
  std::filesystem::rename(temp_path_, path_, ec);
  if (ec) {
    // The removal's outcome must not replace the rename's reason.
    RemoveTemporary();
    return InvalidArgumentError(fmt::format("cannot write \"{}\": {}", path_, ec.message()));
  }
  committed_ = true;
  return OkStatus();
}

}  // namespace placesim::traces
