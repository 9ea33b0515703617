# i686 Linux with Debian's g++-12-i686-linux-gnu; see linux-gnu-cross.cmake.
set(LOCKSTEP_CROSS_TRIPLE i686-linux-gnu)
set(LOCKSTEP_CROSS_PROCESSOR i686)
include(${CMAKE_CURRENT_LIST_DIR}/linux-gnu-cross.cmake)
# g++ 12 at -O2 on i686 reports a std::variant destructor inside Result<Recorder<World>> as
# freeing a non-heap pointer (a false positive of GCC 12's -Wfree-nonheap-object, gone in 13).
set(CMAKE_CXX_FLAGS_INIT "-Wno-free-nonheap-object")
