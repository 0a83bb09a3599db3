// Unit tests of the cache folder (codegen/CompileCache.h): round trips, corrupt entries, LRU eviction, unusable folders.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "codegen/CompileCache.h"

namespace fs = std::filesystem;
using dscc::codegen::CompileCache;

namespace {

std::vector<std::string> gWarnings;
void collect(const std::string& w) { gWarnings.push_back(w); }

struct TempDir {
  std::string path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "dscc-cache-unit-XXXXXX").string();
    path = mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string entryPath(const std::string& dir, const std::string& kind, const std::string& key) {
  return dir + "/v1/" + kind + "-" + key;
}

// Sets a file's mtime to `seconds` after the epoch (the LRU clock).
void setMtime(const std::string& p, time_t seconds) {
  struct timespec ts[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, p.c_str(), ts, 0), 0);
}

}  // namespace

TEST(CompileCacheTest, HashesAreKnownValues) {
  EXPECT_EQ(dscc::codegen::sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(dscc::codegen::xxh3Hex("abc").size(), 32u);
  EXPECT_NE(dscc::codegen::xxh3Hex("abc"), dscc::codegen::xxh3Hex("abd"));
}

TEST(CompileCacheTest, RoundTripAndCounts) {
  TempDir d;
  CompileCache c(d.path, 1 << 20, collect);
  ASSERT_TRUE(c.enabled());
  std::string key = dscc::codegen::sha256Hex("k");
  EXPECT_FALSE(c.get("kernel", key));
  std::string payload("object\0bytes", 12);
  c.put("kernel", key, payload);
  auto got = c.get("kernel", key);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, payload);
  EXPECT_EQ(c.counts().at("kernel").hits, 1u);
  EXPECT_EQ(c.counts().at("kernel").misses, 1u);
  EXPECT_EQ(c.counts().at("kernel").stored, 1u);
  // An empty payload is an entry too.
  c.put("host", key, "");
  auto empty = c.get("host", key);
  ASSERT_TRUE(empty);
  EXPECT_EQ(*empty, "");
  // No temporary files are left.
  for (const auto& e : fs::directory_iterator(d.path + "/v1")) EXPECT_NE(e.path().filename().string()[0], '.');
}

TEST(CompileCacheTest, CorruptEntriesAreRemovedNotUsed) {
  TempDir d;
  std::string key = dscc::codegen::sha256Hex("k");
  std::string p = entryPath(d.path, "obj", key);
  for (int how = 0; how < 4; ++how) {
    gWarnings.clear();
    CompileCache c(d.path, 1 << 20, collect);
    c.put("obj", key, std::string(1000, 'x'));
    std::string bytes;
    {
      std::ifstream in(p, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    if (how == 0) bytes[500] ^= 1;                  // payload bit flip
    if (how == 1) bytes.resize(bytes.size() - 1);   // truncated
    if (how == 2) bytes.clear();                    // empty
    if (how == 3) bytes[3] = 'X';                   // bad magic
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    EXPECT_FALSE(c.get("obj", key)) << how;
    EXPECT_EQ(c.counts().at("obj").corrupt, 1u) << how;
    EXPECT_FALSE(fs::exists(p)) << how;
    ASSERT_EQ(gWarnings.size(), 1u) << how;
    EXPECT_NE(gWarnings[0].find("corrupt"), std::string::npos);
  }
}

TEST(CompileCacheTest, EvictsLeastRecentlyUsedToNinetyPercent) {
  TempDir d;
  const std::string blob(10000, 'b');
  std::vector<std::string> keys;
  {
    CompileCache c(d.path, 1 << 30, collect);
    for (int i = 0; i < 10; ++i) {
      keys.push_back(dscc::codegen::sha256Hex(std::to_string(i)));
      c.put("kernel", keys.back(), blob);
      setMtime(entryPath(d.path, "kernel", keys.back()), 1000000 + i);  // entry i used at time i
    }
  }
  // Entry 0 is used again (a hit refreshes it), so 1, 2, ... go first.
  uint64_t entryBytes = fs::file_size(entryPath(d.path, "kernel", keys[0]));
  CompileCache c(d.path, entryBytes * 6, collect);
  ASSERT_TRUE(c.get("kernel", keys[0]));
  c.put("kernel", dscc::codegen::sha256Hex("new"), blob);
  c.evictIfNeeded();
  auto [n, bytes] = c.usage();
  EXPECT_LE(bytes, entryBytes * 6 / 10 * 9);
  EXPECT_EQ(c.evicted(), 11u - n);
  EXPECT_TRUE(fs::exists(entryPath(d.path, "kernel", keys[0])));
  EXPECT_TRUE(fs::exists(entryPath(d.path, "kernel", dscc::codegen::sha256Hex("new"))));
  EXPECT_FALSE(fs::exists(entryPath(d.path, "kernel", keys[1])));
  EXPECT_TRUE(fs::exists(entryPath(d.path, "kernel", keys[9])));
}

TEST(CompileCacheTest, PayloadOverTheLimitIsNotStored) {
  TempDir d;
  CompileCache c(d.path, 100, collect);
  c.put("so", dscc::codegen::sha256Hex("big"), std::string(200, 'x'));
  EXPECT_EQ(c.usage().first, 0u);
}

TEST(CompileCacheTest, UnusableFolderWarnsAndDisables) {
  TempDir d;
  std::string file = d.path + "/file";
  std::ofstream(file) << "x";
  gWarnings.clear();
  CompileCache c(file + "/cache", 1 << 20, collect);
  EXPECT_FALSE(c.enabled());
  ASSERT_EQ(gWarnings.size(), 1u);
  EXPECT_NE(gWarnings[0].find("without the cache"), std::string::npos);
  c.put("kernel", "k", "bytes");  // ignored, no crash
  EXPECT_FALSE(c.get("kernel", "k"));
}
