#include "ir/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ab {
namespace {

std::string not_regular(mode_t mode) {
  if (S_ISDIR(mode)) return "it is a directory";
  const char* kind = S_ISFIFO(mode)   ? "a FIFO"
                     : S_ISCHR(mode)  ? "a character device"
                     : S_ISBLK(mode)  ? "a block device"
                     : S_ISSOCK(mode) ? "a socket"
                                      : "a special file";
  return std::string("it is not a regular file (") + kind + ")";
}

}  // namespace

FileContents read_regular_file(const std::string& path) {
  FileContents file;
  // Checked before opening: opening a FIFO for reading blocks until someone writes to it.
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    file.error = std::strerror(errno);
    return file;
  }
  if (!S_ISREG(info.st_mode)) {
    file.error = not_regular(info.st_mode);
    return file;
  }
  // O_NONBLOCK: should the path be swapped for a FIFO after the check, open still returns.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    file.error = std::strerror(errno);
    return file;
  }
  // What was opened is what gets read: check it again.
  if (::fstat(fd, &info) != 0) {
    file.error = std::strerror(errno);
  } else if (!S_ISREG(info.st_mode)) {
    file.error = not_regular(info.st_mode);
  }
  if (!file.ok()) {
    ::close(fd);
    return file;
  }
  file.bytes.reserve(static_cast<size_t>(info.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      file.error = std::strerror(errno);
      file.bytes.clear();
      break;
    }
    file.bytes.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  return file;
}

}  // namespace ab
