// AtomicFile and commit_all(): a run's outputs appear together, whole, or not at all.

#include "common/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/file_input_error.h"
#include "tests/read_file.h"

namespace topoep {
namespace {

namespace fs = std::filesystem;

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Only the targets: no temporary left beside them.
int entries(const std::string& dir) {
  return static_cast<int>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(AtomicFile, CommitAllPlacesEveryFile) {
  const std::string dir = fresh_dir("atomic_all");
  AtomicFile a(dir + "/a.csv"), b(dir + "/b.json");
  a.write("1,2\n");
  b.write("{}\n");
  commit_all({&a, nullptr, &b});
  EXPECT_EQ(testing::read_file(dir + "/a.csv"), "1,2\n");
  EXPECT_EQ(testing::read_file(dir + "/b.json"), "{}\n");
  EXPECT_EQ(entries(dir), 2);
}

TEST(AtomicFile, AnUncommittedFileLeavesTheOldOneAndNoTemporary) {
  const std::string dir = fresh_dir("atomic_uncommitted");
  std::ofstream(dir + "/a.csv") << "old\n";
  {
    AtomicFile a(dir + "/a.csv");
    a.write("new\n");
  }
  EXPECT_EQ(testing::read_file(dir + "/a.csv"), "old\n");
  EXPECT_EQ(entries(dir), 1);
}

// rename() onto a directory would fail only at the end of a run, after its work and after the
// outputs committed before it were in place.
TEST(AtomicFile, ADirectoryIsRefusedWhenTheFileIsOpened) {
  const std::string dir = fresh_dir("atomic_directory");
  fs::create_directories(dir + "/timeline.json");
  try {
    AtomicFile file(dir + "/timeline.json");
    FAIL() << "no error";
  } catch (const FileInputError& error) {
    EXPECT_EQ(error.file(), dir + "/timeline.json");
  }
  EXPECT_EQ(entries(dir), 1);
}

// A write that fails (here a file-size limit, as a full disk would) in the second file leaves
// the first one out of place too.
TEST(AtomicFile, AFailedWriteLeavesNoneOfTheFilesCommittedTogether) {
  const std::string dir = fresh_dir("atomic_failed");
  AtomicFile small(dir + "/small.csv"), large(dir + "/large.csv");
  small.write("1\n");
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &before), 0);
  const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = before;
  limited.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  large.write(std::string(1 << 16, 'x'));
  bool thrown = false;
  try {
    commit_all({&small, &large});
  } catch (const FileInputError& error) {
    thrown = true;
    EXPECT_EQ(error.file(), dir + "/large.csv");
  }
  setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, previous_handler);
  EXPECT_TRUE(thrown);
  EXPECT_FALSE(fs::exists(dir + "/small.csv"));
  EXPECT_FALSE(fs::exists(dir + "/large.csv"));
}

}  // namespace
}  // namespace topoep
