#pragma once
// The process's umask set for a test's duration, as a user's shell might have it (0 lets every
// permission bit through, 0277 takes even the owner's write), then put back.

#include <sys/stat.h>

namespace lockstep::testing {

class UmaskIs {
 public:
  explicit UmaskIs(mode_t mask) : before_(::umask(mask)) {}
  ~UmaskIs() { ::umask(before_); }
  UmaskIs(const UmaskIs&) = delete;
  UmaskIs& operator=(const UmaskIs&) = delete;

 private:
  mode_t before_;
};

}  // namespace lockstep::testing
