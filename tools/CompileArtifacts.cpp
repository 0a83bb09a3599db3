// Objects and shared libraries for `dscc compile`: the model split per kernel, each piece taken from the cache or compiled (in parallel), then linked by the system tools in a private temporary folder.
//
// The pieces are always compiled and linked the same way, so an artifact is
// the same bytes whether its pieces came from the cache, from a compile, or
// the whole artifact from the cache (docs/compile.md, "The compile cache").
#include "tools/CompileArtifacts.h"

#include <dlfcn.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "codegen/CompileCache.h"
#include "codegen/DebugInfo.h"
#include "codegen/Jit.h"
#include "codegen/SplitModel.h"
#include "ir/Tensor.h"
#include "runtime/dscc_runtime.h"

extern char** environ;

namespace dscc::tools {
namespace {

namespace fs = std::filesystem;

// The folder holding libdscc_runtime.so (unless --runtime-dir gives one): the
// runtime this process loaded (the dscc executable, or the Python module that
// compiles, links it), else the one next to the build tree's tools/.
std::string defaultRuntimeDir() {
  std::error_code ec;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&dscc_abi_version), &info) && info.dli_fname) {
    fs::path lib = fs::canonical(info.dli_fname, ec);
    if (!ec && lib.filename().string().rfind("libdscc_runtime.so", 0) == 0 &&
        fs::exists(lib.parent_path() / "libdscc_runtime.so", ec))
      return lib.parent_path().string();
  }
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (fs::path cand : {exe.parent_path().parent_path() / "runtime", exe.parent_path().parent_path() / "lib"})
    if (fs::exists(cand / "libdscc_runtime.so", ec)) return fs::canonical(cand, ec).string();
  return "";
}

bool readFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

// A private temporary folder, removed with everything in it at the end.
struct TempDir {
  std::string path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "dscc-XXXXXX").string();
    if (mkdtemp(t.data())) path = t;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

// Assembles the external weights into DIR/weights.o (GNU as via cc, .incbin
// of DIR/weights.bin). Fixed names, so the object's file symbol never varies.
std::string weightsObject(const codegen::ExternalData& w, const std::string& dir, std::string& obj) {
  std::string bin = dir + "/weights.bin", asmFile = dir + "/weights.s", err;
  obj = dir + "/weights.o";
  if (std::string e = w.write(bin); !e.empty()) return e;
  if (!writeFile(asmFile, w.assembly(bin), &err)) return err;
  if (runProgram({"cc", "-c", "-o", obj, asmFile}) != 0)
    return "the system assembler (cc -c) failed on the weights (" + std::to_string(w.size) + " bytes)";
  return "";
}

// The weights' part of an artifact's key: offsets, sizes and an xxh3 of each constant.
std::string weightsDigest(const codegen::ExternalData& w) {
  std::string d = "weights " + std::to_string(w.size);
  for (const auto& [offset, t] : w.parts)
    d += "\n" + std::to_string(offset) + " " + std::to_string(t->bytes.size()) + " " +
         codegen::xxh3Hex(std::string_view(reinterpret_cast<const char*>(t->bytes.data()), t->bytes.size()));
  return d;
}

std::string fileStamp(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return path + " (missing)";
  return path + " " + std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

// Writes an artifact atomically (a temporary beside it, renamed over it): a
// process that has the old library mapped keeps it, and concurrent compiles
// of one output never interleave. `mode` before the umask.
bool writeArtifact(const std::string& path, const std::string& bytes, mode_t mode, std::string* err) {
  if (path == "-") return writeFile(path, bytes, err);
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  mode_t mask = umask(0);
  umask(mask);
  if (writeFile(tmp, bytes, err) && chmod(tmp.c_str(), mode & ~mask) == 0 && std::rename(tmp.c_str(), path.c_str()) == 0)
    return true;
  std::error_code ec;
  fs::remove(tmp, ec);
  return writeFile(path, bytes, err);  // a folder we may not create files in, but the output is writable
}

// The system tool `name` as found in PATH, stamped: the linker and
// assembler decide an artifact's bytes as much as the compiler does.
std::string toolStamp(const std::string& name) {
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':')) {
      fs::path p = fs::path(dir.empty() ? "." : dir) / name;
      if (access(p.c_str(), X_OK) == 0) {
        std::error_code ec;
        fs::path real = fs::canonical(p, ec);
        return fileStamp(ec ? p.string() : real.string());
      }
    }
  }
  return name + " (not found)";
}

int fail(const std::string& msg) {
  std::cerr << "dscc: error: " << msg << "\n";
  return 1;
}

}  // namespace

bool writeFile(const std::string& path, const std::string& bytes, std::string* err) {
  if (path == "-") {
    std::cout << bytes;
    return true;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    *err = "cannot write '" + path + "'";
    return false;
  }
  return true;
}

int runProgram(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int buildArtifacts(const Session& fe, const ArtifactRequest& r) {
  std::unique_ptr<codegen::CompileCache> cache = openCache(r.cache, "dscc");
  // Weights stay out of LLVM: assembled from a file beside the code, so memory holds them once.
  codegen::CodeModule m(fe.func->name);
  codegen::ExternalData weights;
  Location where;
  if (std::string e = codegen::emitModel(fe.plan, fe.source, m, r.gpu, fs::absolute(r.file).parent_path().string(),
                                         &weights, &where);
      !e.empty()) {
    reportCannotCompile(fe, r.file, e, where, std::cerr);
    return 1;
  }
  if (r.debugInfo) codegen::addDebugInfo(m, fe.plan, r.file, r.object.optLevel > 0);
  std::string salt = compilerIdentity() + "\n" + codegen::targetKey(r.object);
  codegen::SplitModel split;
  if (std::string e = split.split(m, fe.plan, salt); !e.empty()) return fail(e);

  // The link's inputs decide a library's bytes too: its name, RUNPATH and the runtime it is linked against.
  bool originRelative = r.runtimeDir.rfind("$ORIGIN", 0) == 0 || r.runtimeDir.rfind("${ORIGIN}", 0) == 0;
  std::string rt, runpath;
  if (!r.soPath.empty()) {
    rt = r.runtimeDir.empty() || originRelative ? defaultRuntimeDir() : r.runtimeDir;
    if (rt.empty() || !fs::exists(fs::path(rt) / "libdscc_runtime.so"))
      return fail("cannot find libdscc_runtime.so (looked beside the runtime this process loaded, and next to the dscc "
                  "executable in ../runtime and ../lib; "
                  "give --runtime-dir)");
    // RUNPATH: the model's own folder first (a runtime deployed beside it),
    // then the runtime's folder (or the $ORIGIN-relative one given).
    runpath = "$ORIGIN:" + (originRelative ? r.runtimeDir : fs::absolute(rt).lexically_normal().string());
  }
  std::string soname = fs::path(r.soPath).filename().string();
  std::string pieces = salt + "\nhost " + split.hostKey();
  for (size_t i = 0; i < split.kernelCount(); ++i) pieces += "\nkernel " + split.kernelKey(i);
  pieces += "\n" + weightsDigest(weights);
  pieces += "\ntools " + toolStamp("cc") + ", " + toolStamp("ld") + ", " + toolStamp("as") + ", " + toolStamp("objcopy");
  std::string objKey = codegen::sha256Hex(pieces + "\nobj"),
              soKey = codegen::sha256Hex(pieces + "\nso " + soname + "\nrunpath " + runpath + "\nruntime " +
                                         fileStamp((fs::path(rt) / "libdscc_runtime.so").string()));

  auto finish = [&](int rc) {
    if (cache) {
      cache->evictIfNeeded();
      if (r.cache.stats) printCacheStats(*cache, "dscc", std::cerr);
    } else if (r.cache.stats) {
      std::cerr << "dscc: cache: off (--no-cache, cache.enabled: false, or no folder known)\n";
    }
    return rc;
  };
  // A whole artifact is stored only up to a quarter of the limit: a model
  // with large weights would otherwise push out every kernel for bytes that
  // only save a link (its kernels and host object are still stored).
  std::string err, objBytes, soBytes;
  bool needObj = !r.objPath.empty(), needSo = !r.soPath.empty();
  if (cache && needObj)
    if (auto hit = cache->get("obj", objKey)) {
      objBytes = std::move(*hit);
      needObj = false;
    }
  if (cache && needSo)
    if (auto hit = cache->get("so", soKey)) {
      soBytes = std::move(*hit);
      needSo = false;
    }
  if (needObj || needSo) {
    // The pieces: from the cache where it has them, else compiled.
    std::vector<std::string> objects(split.kernelCount());
    std::vector<size_t> missing;
    for (size_t i = 0; i < split.kernelCount(); ++i) {
      std::optional<std::string> hit = cache ? cache->get("kernel", split.kernelKey(i)) : std::nullopt;
      if (hit) objects[i] = std::move(*hit);
      else missing.push_back(i);
    }
    std::string hostObj;
    std::optional<std::string> hostHit = cache ? cache->get("host", split.hostKey()) : std::nullopt;
    if (hostHit) hostObj = std::move(*hostHit);
    {
      ProgressLine progress(r.cache.progress, "dscc: compiling " + fs::path(r.file).filename().string() + ":");
      auto report = [&](size_t done, size_t total) { progress.update(done, total, "kernels and host code"); };
      if (std::string e = split.compile(missing, !hostHit, r.object, r.jobs, objects, hostObj, report); !e.empty())
        return finish(fail(e));
    }
    if (cache) {
      for (size_t i : missing) cache->put("kernel", split.kernelKey(i), objects[i]);
      if (!hostHit) cache->put("host", split.hostKey(), hostObj);
    }
    TempDir tmp;
    if (tmp.path.empty()) return finish(fail("cannot create a temporary folder in " + fs::temp_directory_path().string()));
    // Kernels first, then the host code: the order of the objects is the order of the code (and of -g's units).
    std::vector<std::string> inputs;
    for (size_t i = 0; i < objects.size(); ++i) {
      inputs.push_back(tmp.path + "/k" + std::to_string(i) + ".o");
      if (!writeFile(inputs.back(), objects[i], &err)) return finish(fail(err));
    }
    inputs.push_back(tmp.path + "/host.o");
    if (!writeFile(inputs.back(), hostObj, &err)) return finish(fail(err));
    if (weights.size > 0) {
      std::string w;
      if (std::string e = weightsObject(weights, tmp.path, w); !e.empty()) return finish(fail(e));
      inputs.push_back(w);
    }
    if (needObj) {
      // One relocatable object; the kernels' and the weights' hidden symbols
      // made local, so two models linked into one program never clash.
      std::string out = tmp.path + "/model.o";
      std::vector<std::string> ld = {"ld", "-r", "-o", out};
      ld.insert(ld.end(), inputs.begin(), inputs.end());
      if (runProgram(ld) != 0) return finish(fail("the system linker (ld -r) failed to merge the model's objects"));
      if (runProgram({"objcopy", "--localize-hidden", out}) != 0)
        return finish(fail("objcopy --localize-hidden failed on the model's object"));
      if (!readFile(out, objBytes)) return finish(fail("cannot read back the linked object"));
      if (cache && objBytes.size() <= r.cache.maxBytes / 4) cache->put("obj", objKey, objBytes);
    }
    if (needSo) {
      // --runtime-dir '$ORIGIN/...' is recorded as is (the model finds the
      // runtime relative to itself); the runtime linked against is then the
      // one beside dscc. Any other folder is both linked and recorded.
      std::string out = tmp.path + "/" + (soname.empty() ? "model.so" : soname);
      std::vector<std::string> link = {"cc", "-shared", "-o", out};
      link.insert(link.end(), inputs.begin(), inputs.end());
      for (std::string a : {"-Wl,-soname," + soname, "-L" + rt, std::string("-ldscc_runtime"),
                            std::string("-Wl,--enable-new-dtags"), "-Wl,-rpath," + runpath, std::string("-lmvec"),
                            std::string("-lm")})
        link.push_back(a);
      if (int rc = runProgram(link); rc != 0)
        return finish(fail("the system linker (cc -shared) failed with status " + std::to_string(rc)));
      if (!readFile(out, soBytes)) return finish(fail("cannot read back the linked library"));
      if (cache && soBytes.size() <= r.cache.maxBytes / 4) cache->put("so", soKey, soBytes);
    }
  }
  if (!r.objPath.empty() && !writeArtifact(r.objPath, objBytes, 0666, &err)) return finish(fail(err));
  if (!r.soPath.empty() && !writeArtifact(r.soPath, soBytes, 0777, &err)) return finish(fail(err));
  return finish(0);
}

}  // namespace dscc::tools
