# aarch64 Linux with Debian's g++-12-aarch64-linux-gnu; see linux-gnu-cross.cmake.
set(LOCKSTEP_CROSS_TRIPLE aarch64-linux-gnu)
set(LOCKSTEP_CROSS_PROCESSOR aarch64)
set(LOCKSTEP_CROSS_QEMU qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/linux-gnu-cross.cmake)
