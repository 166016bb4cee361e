// AtomicOutputFile: writes a file of any length as a stream, so that its path only ever holds
// the old content or the complete new one. Bytes go to a temporary file created next to the
// target (same folder, so the final rename stays on one file system and is atomic on POSIX);
// Commit() renames it over the target. Until then the target is untouched; a file that is
// destroyed without a successful Commit() removes its temporary. A process killed mid-write
// may leave the temporary behind (named "<path>.<pid>.<n>.tmp"), never a half-written target.
//
// A symlink is followed to its final target: the temporary goes beside the target and the rename
// replaces the target, so the link stays a link. A target that exists and is not a regular file
// (a character device such as /dev/null or /dev/full, a FIFO) cannot be replaced atomically and
// must not be replaced at all: the content streams straight into it, and Commit() reports a
// failed write (ENOSPC on /dev/full) instead of renaming.
//
// Used by `placesim simulate --trace`, whose trace streams to disk while the simulation runs,
// so memory stays bounded whatever the trace's size.
//
// Thread-safety: one object per thread. Objects for different paths (or for one path in
// different threads or processes: each gets its own temporary, and the last Commit wins) are
// independent.
#ifndef PLACESIM_TRACES_ATOMIC_OUTPUT_FILE_H_
#define PLACESIM_TRACES_ATOMIC_OUTPUT_FILE_H_

#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

#include "base/status.h"

namespace placesim::traces {

class AtomicOutputFile {
 public:
  // Creates the temporary next to `path`'s final target and opens it for writing (binary), or
  // opens the target itself when it is a device or a FIFO (which blocks until a FIFO has a
  // reader).
  // Errors (kInvalidArgument, naming the path): `path` is a directory ("it is a directory");
  // the temporary cannot be created (the folder is missing or not writable, with the reason).
  static StatusOr<std::unique_ptr<AtomicOutputFile>> Create(const std::string& path);

  // Removes the temporary unless Commit() succeeded.
  ~AtomicOutputFile();
  AtomicOutputFile(const AtomicOutputFile&) = delete;
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

  // Where to write the content. Valid until the object is destroyed; writing after Commit() is
  // a program bug.
  std::ostream& stream() { return out_; }

  // Flushes and closes the temporary and renames it over the target. On error (a write that
  // failed at any point, or the rename) removes the temporary and leaves the target as it was;
  // kInvalidArgument naming the file and the reason. When streaming, flushes and closes, and
  // reports a failed write the same way. REQUIRES: called at most once.
  Status Commit();

  // OK unless a write has failed already; then the error Commit() would give ("failed writing
  // PATH: REASON"), so that a writer that notices its stream failing can report the cause.
  Status WriteStatus() const;

  const std::string& path() const { return path_; }
  // Empty when streaming straight into a device or FIFO.
  const std::string& temp_path() const { return temp_path_; }

 private:
  // A buffered streambuf over a file descriptor that keeps the errno of the first failed write
  // (std::ofstream drops it), so that Commit() can say "No space left on device".
  class FdBuffer : public std::streambuf {
   public:
    explicit FdBuffer(int fd);
    ~FdBuffer() override { Close(); }
    // Writes what is buffered and closes the descriptor; false when any write or the close
    // failed (error() says why). Idempotent.
    bool Close();
    int error() const { return error_; }

   protected:
    int_type overflow(int_type c) override;
    int sync() override { return Drain() ? 0 : -1; }

   private:
    bool Drain();
    int fd_;
    int error_ = 0;  // errno of the first failure; 0 when none
    std::vector<char> buffer_;
  };

  AtomicOutputFile(std::string path, std::string target, std::string temp_path, int fd);
  bool streaming() const { return temp_path_.empty(); }
  void RemoveTemporary();

  std::string path_;       // as the user gave it, for messages
  std::string target_;     // `path_` with every symlink followed
  std::string temp_path_;  // empty when streaming
  FdBuffer buffer_;
  std::ostream out_;  // writes into buffer_
  bool committed_ = false;
};

}  // namespace placesim::traces

#endif  // PLACESIM_TRACES_ATOMIC_OUTPUT_FILE_H_
