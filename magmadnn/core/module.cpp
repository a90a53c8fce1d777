#include "magmadnn/core/module.h"

#include <dlfcn.h>

#include <filesystem>

#include "magmadnn/core/config.h"

namespace magmadnn {

bool nvidia_driver_present() noexcept {
  std::error_code ec;
  return std::filesystem::exists("/proc/driver/nvidia/version", ec) || std::filesystem::exists("/dev/nvidiactl", ec);
}

void* load_module(const std::string& name, std::string* why) noexcept {
  try {
    // This library's own folder: the module is installed (and built) beside it.
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&load_module), &info) == 0 || info.dli_fname == nullptr) {
      if (why) *why = "cannot tell where libmagmadnn_core was loaded from";
      return nullptr;
    }
    const std::filesystem::path dir = std::filesystem::path(info.dli_fname).parent_path();
    const std::string file = "libmagmadnn_" + name + ".so." + std::to_string(MAGMADNN_VERSION_MAJOR);
    const std::string path = (dir / file).string();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr && why) {
      const char* err = dlerror();
      *why = "the " + name + " module " + path + " did not load: " + (err ? err : "unknown reason");
    }
    return handle;
  } catch (const std::exception& e) {
    if (why) *why = std::string("loading the ") + name + " module failed: " + e.what();
    return nullptr;
  }
}

void* module_symbol(void* module, const char* symbol, std::string* why) noexcept {
  void* f = module ? dlsym(module, symbol) : nullptr;
  if (f == nullptr && why) {
    const char* err = dlerror();
    *why = std::string("entry point ") + symbol + " not found: " + (err ? err : "no module");
  }
  return f;
}

}  // namespace magmadnn
