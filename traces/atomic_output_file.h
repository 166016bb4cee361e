// AtomicOutputFile: writes a file of any length as a stream, so that its path only ever holds
// the old content or the complete new one. Bytes go to a temporary file created next to the
// target (same folder, so the final rename stays on one file system and is atomic on POSIX);
// Commit() renames it over the target. Until then the target is untouched; a file that is
// destroyed without a successful Commit() removes its temporary. A process killed mid-write
// may leave the temporary behind (named "<path>.<pid>.<n>.tmp"), never a half-written target.
//
// Used by `placesim simulate --trace`, whose trace streams to disk while the simulation runs,
// so memory stays bounded whatever the trace's size.
//
// Thread-safety: one object per thread. Objects for different paths (or for one path in
// different threads or processes: each gets its own temporary, and the last Commit wins) are
// independent.
#ifndef PLACESIM_TRACES_ATOMIC_OUTPUT_FILE_H_
#define PLACESIM_TRACES_ATOMIC_OUTPUT_FILE_H_

#include <fstream>
#include <memory>
#include <ostream>
#include <string>

#include "base/status.h"

namespace placesim::traces {

class AtomicOutputFile {
 public:
  // Creates the temporary next to `path` and opens it for writing (binary).
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
  // kInvalidArgument naming the file. REQUIRES: called at most once.
  Status Commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  AtomicOutputFile(std::string path, std::string temp_path);
  void RemoveTemporary();

  std::string path_;
  std::string temp_path_;
  std::ofstream out_;
  bool committed_ = false;
};

}  // namespace placesim::traces

#endif  // PLACESIM_TRACES_ATOMIC_OUTPUT_FILE_H_
