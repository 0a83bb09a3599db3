// The last-level cache size the runtime's streaming threshold uses: sysfs parsing on made-up trees.
#include "runtime/CacheSize.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "runtime/dscc_generated.h"

using dscc::runtime::lastLevelCacheBytes;
using dscc::runtime::parseCacheSize;

TEST(CacheSize, ParsesSysfsSizes) {
  EXPECT_EQ(parseCacheSize("32768K"), int64_t(32) << 20);
  EXPECT_EQ(parseCacheSize("1024K\n"), int64_t(1) << 20);
  EXPECT_EQ(parseCacheSize("48M"), int64_t(48) << 20);
  EXPECT_EQ(parseCacheSize("2G"), int64_t(2) << 30);
  EXPECT_EQ(parseCacheSize("512"), 512);
  EXPECT_EQ(parseCacheSize("1023G"), int64_t(1023) << 30);
  for (const char* bad : {"", "K", "-4K", "0K", "12Q", "4 K", "1048576M", "99999999999999999999", "1024G"})
    EXPECT_EQ(parseCacheSize(bad), 0) << "'" << bad << "'";
}

class CacheTree : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("dscc-cache-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void index(int i, const std::string& level, const std::string& type, const std::string& size) {
    std::filesystem::path d = dir_ / ("index" + std::to_string(i));
    std::filesystem::create_directories(d);
    std::ofstream(d / "level") << level << "\n";
    std::ofstream(d / "type") << type << "\n";
    std::ofstream(d / "size") << size << "\n";
  }
  std::filesystem::path dir_;
};

// The Zen 4 VM's tree: the L3 (32 MiB), not the 320 MiB glibc's sysconf reported.
TEST_F(CacheTree, HighestLevelWins) {
  index(0, "1", "Data", "32K");
  index(1, "1", "Instruction", "32K");
  index(2, "2", "Unified", "1024K");
  index(3, "3", "Unified", "32768K");
  EXPECT_EQ(lastLevelCacheBytes(dir_.string()), int64_t(32) << 20);
}

// An unreadable L3 size leaves the L2; an instruction cache never counts.
TEST_F(CacheTree, SkipsBadAndInstructionEntries) {
  index(0, "1", "Data", "48K");
  index(1, "2", "Unified", "2048K");
  index(2, "3", "Unified", "lots");
  index(3, "4", "Instruction", "64M");
  EXPECT_EQ(lastLevelCacheBytes(dir_.string()), int64_t(2) << 20);
}

TEST_F(CacheTree, NothingReadable) {
  EXPECT_EQ(lastLevelCacheBytes(dir_.string()), 0);
  index(0, "x", "Data", "32K");
  EXPECT_EQ(lastLevelCacheBytes(dir_.string()), 0);
}

// The runtime's threshold takes sysfs' answer where this machine has one.
TEST(CacheSize, StreamThresholdIsSysfsLastLevel) {
  int64_t sys = lastLevelCacheBytes("/sys/devices/system/cpu/cpu0/cache");
  if (sys == 0) GTEST_SKIP() << "this machine lists no caches in sysfs";
  EXPECT_EQ(dscc_stream_min_bytes(), sys);
}
