// AtomicOutputFile: the target holds its old content or the complete new one, never a part;
// a failure (bad target, failed write, failed rename, no Commit) leaves no temporary behind.
#include "traces/atomic_output_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace placesim::traces {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A fresh folder private to the running test (ctest runs tests in parallel processes).
fs::path TestDir() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(::testing::TempDir()) /
                 (std::string("atomic-") + info->test_suite_name() + "." + info->name());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string Read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void Write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

// The names in `dir`, to check that nothing but the target is left.
std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  return names;
}

TEST(AtomicOutputFile, TheTargetAppearsOnlyAtCommitWithTheWholeContent) {
  const fs::path dir = TestDir();
  const fs::path target = dir / "trace.json";
  StatusOr<std::unique_ptr<AtomicOutputFile>> f = AtomicOutputFile::Create(target.string());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  (*f)->stream() << "{\"traceEvents\":[";
  (*f)->stream().flush();
  // Mid-write: the bytes sit in the temporary, next to the target, and the target is absent.
  EXPECT_FALSE(fs::exists(target));
  EXPECT_EQ(fs::path((*f)->temp_path()).parent_path(), dir);
  EXPECT_EQ(Read((*f)->temp_path()), "{\"traceEvents\":[");
  (*f)->stream() << "]}";
  ASSERT_TRUE((*f)->Commit().ok());
  EXPECT_EQ(Read(target), "{\"traceEvents\":[]}");
  EXPECT_THAT(Entries(dir), ::testing::ElementsAre("trace.json"));
}

TEST(AtomicOutputFile, CommitReplacesAnExistingTarget) {
  const fs::path dir = TestDir();
  const fs::path target = dir / "out.json";
  Write(target, "old");
  StatusOr<std::unique_ptr<AtomicOutputFile>> f = AtomicOutputFile::Create(target.string());
  ASSERT_TRUE(f.ok());
  (*f)->stream() << "new content";
  (*f)->stream().flush();
  EXPECT_EQ(Read(target), "old");  // untouched until the commit
  ASSERT_TRUE((*f)->Commit().ok());
  EXPECT_EQ(Read(target), "new content");
  EXPECT_THAT(Entries(dir), ::testing::ElementsAre("out.json"));
}

TEST(AtomicOutputFile, WithoutCommitTheTemporaryGoesAndAnExistingTargetStays) {
  const fs::path dir = TestDir();
  const fs::path target = dir / "out.json";
  Write(target, "old");
  {
    StatusOr<std::unique_ptr<AtomicOutputFile>> f = AtomicOutputFile::Create(target.string());
    ASSERT_TRUE(f.ok());
    (*f)->stream() << std::string(1 << 20, 'x');  // more than any stream buffer holds
  }
  EXPECT_EQ(Read(target), "old");
  EXPECT_THAT(Entries(dir), ::testing::ElementsAre("out.json"));
}

TEST(AtomicOutputFile, AFailedWriteIsReportedAtCommitAndChangesNothing) {
  const fs::path dir = TestDir();
  const fs::path target = dir / "out.json";
  Write(target, "old");
  StatusOr<std::unique_ptr<AtomicOutputFile>> f = AtomicOutputFile::Create(target.string());
  ASSERT_TRUE(f.ok());
  (*f)->stream() << "partial";
  (*f)->stream().setstate(std::ios::badbit);  // as a full disk would leave it
  const Status s = (*f)->Commit();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("failed writing"));
  EXPECT_EQ(Read(target), "old");
  EXPECT_THAT(Entries(dir), ::testing::ElementsAre("out.json"));
}

TEST(AtomicOutputFile, AFailedRenameRemovesTheTemporary) {
  // The target turns into a non-empty directory while the file is written: the rename fails.
  const fs::path dir = TestDir();
  const fs::path target = dir / "out.json";
  StatusOr<std::unique_ptr<AtomicOutputFile>> f = AtomicOutputFile::Create(target.string());
  ASSERT_TRUE(f.ok());
  fs::create_directories(target / "inside");
  (*f)->stream() << "content";
  const Status s = (*f)->Commit();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("cannot write \"" + target.string() + "\""));
  EXPECT_THAT(Entries(dir), ::testing::ElementsAre("out.json"));
  EXPECT_TRUE(fs::is_directory(target / "inside"));
}

TEST(AtomicOutputFile, ADirectoryTargetIsRefusedUpFront) {
  const fs::path dir = TestDir();
  StatusOr<std::unique_ptr<AtomicOutputFile>> f = AtomicOutputFile::Create(dir.string());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message(), "cannot write \"" + dir.string() + "\": it is a directory");
  EXPECT_TRUE(Entries(dir).empty());
}

TEST(AtomicOutputFile, AMissingFolderIsRefusedWithTheReason) {
  const fs::path target = TestDir() / "no-such-folder" / "out.json";
  StatusOr<std::unique_ptr<AtomicOutputFile>> f = AtomicOutputFile::Create(target.string());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(f.status().message(), HasSubstr("cannot write \"" + target.string() + "\""));
  EXPECT_THAT(f.status().message(), HasSubstr("No such file or directory"));
}

TEST(AtomicOutputFile, TwoWritersOfOnePathGetTheirOwnTemporariesAndTheLastCommitWins) {
  const fs::path dir = TestDir();
  const fs::path target = dir / "out.json";
  StatusOr<std::unique_ptr<AtomicOutputFile>> a = AtomicOutputFile::Create(target.string());
  StatusOr<std::unique_ptr<AtomicOutputFile>> b = AtomicOutputFile::Create(target.string());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->temp_path(), (*b)->temp_path());
  (*a)->stream() << "from a";
  (*b)->stream() << "from b";
  ASSERT_TRUE((*a)->Commit().ok());
  ASSERT_TRUE((*b)->Commit().ok());
  EXPECT_EQ(Read(target), "from b");
  EXPECT_THAT(Entries(dir), ::testing::ElementsAre("out.json"));
}

TEST(AtomicOutputFile, WritesThroughASymlinkToItsTargetAndKeepsTheLink) {
  const fs::path dir = TestDir();
  const fs::path real = dir / "real.json";
  const fs::path link = dir / "link.json";
  Write(real, "old");
  fs::create_symlink("real.json", link);  // relative, as `ln -s` makes them
  StatusOr<std::unique_ptr<AtomicOutputFile>> f = AtomicOutputFile::Create(link.string());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  (*f)->stream() << "new";
  ASSERT_TRUE((*f)->Commit().ok());
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_EQ(Read(real), "new");
  EXPECT_EQ(Entries(dir).size(), 2u);  // the link and its target, no temporary
}

TEST(AtomicOutputFile, StreamsIntoAFifoWithoutReplacingIt) {
  const fs::path dir = TestDir();
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  // Opening a FIFO for writing blocks until a reader opens it: read on another thread.
  std::thread reader([&] { received = Read(fifo); });
  StatusOr<std::unique_ptr<AtomicOutputFile>> f = AtomicOutputFile::Create(fifo.string());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  (*f)->stream() << "streamed";
  Status committed = (*f)->Commit();
  f->reset();
  reader.join();
  ASSERT_TRUE(committed.ok()) << committed.ToString();
  EXPECT_EQ(received, "streamed");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(Entries(dir).size(), 1u);
}

TEST(AtomicOutputFile, AFullDeviceIsAnErrorNamingThePathAndLeavesTheDevice) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "/dev/full is not writable here";
  StatusOr<std::unique_ptr<AtomicOutputFile>> f = AtomicOutputFile::Create("/dev/full");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  (*f)->stream() << std::string(1 << 16, 'x');  // more than any stream buffer holds
  Status committed = (*f)->Commit();
  EXPECT_FALSE(committed.ok());
  EXPECT_THAT(committed.message(), HasSubstr("/dev/full"));
  EXPECT_THAT(committed.message(), HasSubstr(std::strerror(ENOSPC)));
  struct stat st {};
  ASSERT_EQ(::stat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

}  // namespace
}  // namespace placesim::traces
