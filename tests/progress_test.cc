// ProgressBar (common/progress.h), drawn on a temporary file standing in for the terminal.

#include "common/progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

namespace topoep {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

std::string contents(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text.push_back(static_cast<char>(c));
  return text;
}

// Past the bar's first tenth of a second, and its redraw interval.
void wait_a_redraw() { std::this_thread::sleep_for(std::chrono::milliseconds(120)); }

TEST(ProgressBar, AJobDoneWithinATenthOfASecondDrawsNothing) {
  File terminal(std::tmpfile());
  ASSERT_NE(terminal, nullptr);
  {
    ProgressBar bar("records", 10, 1, terminal.get());
    for (int done = 1; done <= 10; ++done) bar.update(done);
  }
  EXPECT_EQ(contents(terminal.get()), "");
}

TEST(ProgressBar, DrawsUnitsOfItsSizeAndEndsFullOnItsOwnLine) {
  File terminal(std::tmpfile());
  ASSERT_NE(terminal, nullptr);
  {
    ProgressBar bar("MB", 4000000, 1000000, terminal.get());
    wait_a_redraw();
    bar.update(2500000);  // 2.5 MB shows as 2: whole units, rounded down
    bar.update(4000000);  // within the interval, yet drawn: the bar ends full
  }
  const std::string text = contents(terminal.get());
  const std::size_t half = text.find("] 2/4 MB");
  const std::size_t full = text.find("] 4/4 MB");
  ASSERT_NE(half, std::string::npos) << text;
  ASSERT_NE(full, std::string::npos) << text;
  EXPECT_LT(half, full);
  EXPECT_NE(text.find("MB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("[" + std::string(30, '=') + "]"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "one line, redrawn with carriage returns";
}

TEST(ProgressBar, RedrawsAtMostTenTimesASecond) {
  File terminal(std::tmpfile());
  ASSERT_NE(terminal, nullptr);
  std::chrono::steady_clock::duration updating{};
  {
    ProgressBar bar("records", 1000, 1, terminal.get());
    wait_a_redraw();
    const auto start = std::chrono::steady_clock::now();
    for (int done = 1; done < 1000; ++done) bar.update(done);
    updating = std::chrono::steady_clock::now() - start;
  }
  const std::string text = contents(terminal.get());
  // The first update draws; after it, one more draw per tenth of a second the updates took
  // (none where they took less, as they do unless the machine stalls).
  const auto tenths = std::chrono::duration_cast<std::chrono::milliseconds>(updating).count() / 100;
  std::size_t draws = 0;
  for (const char c : text) draws += c == '\r' ? 1 : 0;
  EXPECT_GE(draws, 1u);
  EXPECT_LE(draws, 1u + static_cast<std::size_t>(tenths)) << text;
  EXPECT_NE(text.find("] 1/1000 records"), std::string::npos) << text;
}

TEST(ProgressBar, NothingToCountDrawsNothing) {
  File terminal(std::tmpfile());
  ASSERT_NE(terminal, nullptr);
  {
    ProgressBar bar("records", 0, 1, terminal.get());
    wait_a_redraw();
    bar.update(0);
  }
  EXPECT_EQ(contents(terminal.get()), "");
}

}  // namespace
}  // namespace topoep
