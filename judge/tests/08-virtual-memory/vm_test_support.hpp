// Helpers shared by the stages of exercise 08: what the system itself says about a process's
// memory, asked without the learner's code.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "alloclab_test.hpp"

namespace alloclab::test::vm {

/// The system's page, the smallest granule.
inline std::size_t page_bytes() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

/// Whether the `n` bytes at `p` are all taken by some mapping of the process (reserved, mapped
/// or inaccessible): asks the system for a new mapping there that must not replace anything,
/// which fails with EEXIST over any existing mapping. A probe that lands is given back at once.
inline bool taken(const void* p, std::size_t n) {
  for (std::size_t at = 0; at < n; at += page_bytes()) {
    void* probe = ::mmap(const_cast<char*>(static_cast<const char*>(p) + at), page_bytes(), PROT_NONE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (probe != MAP_FAILED) {
      ::munmap(probe, page_bytes());
      return false;
    }
    if (errno != EEXIST) return false;
  }
  return true;
}

/// For its lifetime, descriptor `fd` is the same file opened write-only, so the system refuses
/// every mapping of it (EACCES: a mapping reads the file) while a hole can still be punched in it:
/// a map that fails, without touching the code under test. The descriptor is the file again at
/// the end of the scope.
class WriteOnlyFile {
 public:
  explicit WriteOnlyFile(int fd)
      : fd_(fd), kept_(::dup(fd)),
        write_only_(::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_WRONLY | O_CLOEXEC)) {
    swapped_ = kept_ >= 0 && write_only_ >= 0 && ::dup2(write_only_, fd_) == fd_;
  }
  WriteOnlyFile(const WriteOnlyFile&) = delete;
  WriteOnlyFile& operator=(const WriteOnlyFile&) = delete;
  ~WriteOnlyFile() {
    if (swapped_) ::dup2(kept_, fd_);
    if (kept_ >= 0) ::close(kept_);
    if (write_only_ >= 0) ::close(write_only_);
  }
  /// Whether the descriptor is write-only now; a test that is not proves nothing.
  [[nodiscard]] bool swapped() const noexcept { return swapped_; }

 private:
  int fd_, kept_, write_only_;
  bool swapped_ = false;
};

/// An address range [begin, end) of the process.
struct Span {
  std::uintptr_t begin, end;
};

/// Every range of /proc/self/maps that maps the file open at `fd`.
inline std::vector<Span> mappings_of(int fd) {
  std::vector<Span> found;
  struct stat st {};
  if (::fstat(fd, &st) != 0) return found;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev;
    unsigned long long inode = 0;
    in >> range >> perms >> offset >> dev >> inode;
    if (inode != static_cast<unsigned long long>(st.st_ino) || line.find("memfd:") == std::string::npos) continue;
    const auto dash = range.find('-');
    found.push_back({std::stoull(range.substr(0, dash), nullptr, 16), std::stoull(range.substr(dash + 1), nullptr, 16)});
  }
  return found;
}

/// The byte that fill() writes at index i of a region tagged `seed`.
inline std::byte pattern_byte(std::uint64_t seed, std::size_t i) {
  return static_cast<std::byte>((seed * 0x9E3779B1u + i * 13 + (i >> 9)) ^ (seed >> 3));
}

/// Writes the pattern of `seed` into the n bytes at p.
inline void fill(std::byte* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = 0; i < n; ++i) p[i] = pattern_byte(seed, i);
}

/// Whether the n bytes at p still hold fill()'s pattern of `seed`.
inline bool holds(const std::byte* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != pattern_byte(seed, i)) return false;
  return true;
}

/// Whether the n bytes at p are all zero.
inline bool zeros(const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != std::byte{0}) return false;
  return true;
}

/// Reads one byte, which the compiler may not leave out: a first read commits a page.
inline std::byte read_byte(const std::byte* p) { return *static_cast<const volatile std::byte*>(p); }

}  // namespace alloclab::test::vm
