# s390x Linux with Debian's g++-12-s390x-linux-gnu; see linux-gnu-cross.cmake.
set(LOCKSTEP_CROSS_TRIPLE s390x-linux-gnu)
set(LOCKSTEP_CROSS_PROCESSOR s390x)
set(LOCKSTEP_CROSS_QEMU qemu-s390x)
include(${CMAKE_CURRENT_LIST_DIR}/linux-gnu-cross.cmake)
