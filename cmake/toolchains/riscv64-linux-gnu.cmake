# riscv64 Linux with Debian's g++-12-riscv64-linux-gnu; see linux-gnu-cross.cmake.
set(LOCKSTEP_CROSS_TRIPLE riscv64-linux-gnu)
set(LOCKSTEP_CROSS_PROCESSOR riscv64)
set(LOCKSTEP_CROSS_QEMU qemu-riscv64)
include(${CMAKE_CURRENT_LIST_DIR}/linux-gnu-cross.cmake)
