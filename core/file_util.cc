#include "core/file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace trident {
namespace {

std::string ErrnoText() { return std::strerror(errno); }

Status WriteAll(int fd, std::string_view contents, const std::string& tmp) {
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(tmp + ": write failed: " + ErrnoText());
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return IoError(tmp + ": fsync failed: " + ErrnoText());
  return Status::Ok();
}

}  // namespace

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + ErrnoText());
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return IoError(path + ": read failed");
  return contents.str();
}

Status WriteFileAtomic(const std::string& path, std::string_view contents) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return IoError(path + ": cannot create " + tmp + ": " + ErrnoText() +
                   "; check that the folder exists and is writable");
  }
  Status status = WriteAll(fd, contents, tmp);
  if (::close(fd) != 0 && status.ok()) status = IoError(tmp + ": close failed: " + ErrnoText());
  if (status.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    status = IoError(path + ": rename from " + tmp + " failed: " + ErrnoText());
  }
  if (!status.ok()) std::remove(tmp.c_str());
  return status;
}

}  // namespace trident
