// write_whole_file() of the public autobatch/user_input.h: the one checked write of a whole file
// that the library (traces) and the tools (the debugger's dumps) use, so that a full disk is an
// error everywhere and never a truncated file reported as written.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "autobatch/user_input.h"

namespace ab {

std::string write_whole_file(const std::string& path,
                             std::initializer_list<std::string_view> parts) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return std::strerror(errno);
  struct stat info {};
  const bool regular = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  int failure = 0;
  for (std::string_view part : parts) {
    while (!part.empty() && failure == 0) {
      const ssize_t wrote = ::write(fd, part.data(), part.size());
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote <= 0) {
        failure = wrote < 0 ? errno : ENOSPC;
        break;
      }
      part.remove_prefix(static_cast<size_t>(wrote));
    }
  }
  // close() reports what a delayed write found (NFS, a quota).
  if (::close(fd) != 0 && failure == 0) failure = errno;
  if (failure == 0) return "";
  if (regular) ::unlink(path.c_str());
  return std::strerror(failure);
}

}  // namespace ab
