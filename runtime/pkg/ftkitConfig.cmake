# CMake package of ftkit:  find_package(ftkit REQUIRED)  then  ftkit_instrument(<target>)
#
# ftkit::ftrt        the runtime (libftrt.a) with its include directory and link flags
# ftkit_instrument() compiles a target's C/C++ sources with -pg -mfentry (aarch64:
#                    -fpatchable-function-entry=2, the runtime from lib/aarch64-linux-gnu/
#                    when there is one, as ftcc does: docs/ftcc.md), records their call
#                    sites (recordmcount, through the ftkit-launch compiler launcher), links
#                    an executable with the runtime, and runs ftlink on an executable or
#                    shared library
# ftkit_link_runtime() links an executable that is not instrumented itself with the runtime
# FTKIT_RECORDMCOUNT, FTKIT_FTLINK, FTKIT_FTRACE, FTKIT_LAUNCH   the tools' paths
cmake_minimum_required(VERSION 3.13)
include(CMakeFindDependencyMacro)
find_dependency(Threads)

# <prefix>/lib/cmake/ftkit/ftkitConfig.cmake: the prefix is three levels up (relocatable)
get_filename_component(_ftkit_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(FTKIT_RECORDMCOUNT "${_ftkit_prefix}/bin/recordmcount")
set(FTKIT_FTLINK "${_ftkit_prefix}/bin/ftlink")
set(FTKIT_FTRACE "${_ftkit_prefix}/bin/ftrace")
set(FTKIT_LAUNCH "${_ftkit_prefix}/bin/ftkit-launch")

# The target machine (a cross toolchain file sets CMAKE_SYSTEM_PROCESSOR): its flags, and its
# runtime under lib/<triple>/ (make runtime-aarch64) when the host's lib/libftrt.a is not it
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(FTKIT_INSTRUMENT_FLAGS -fpatchable-function-entry=2)
  set(_ftkit_lib "${_ftkit_prefix}/lib/aarch64-linux-gnu/libftrt.a")
else()
  set(FTKIT_INSTRUMENT_FLAGS -pg -mfentry)
  set(_ftkit_lib "${_ftkit_prefix}/lib/x86_64-linux-gnu/libftrt.a")
endif()
if(NOT EXISTS "${_ftkit_lib}")
  set(_ftkit_lib "${_ftkit_prefix}/lib/libftrt.a")
endif()

if(NOT TARGET ftkit::ftrt)
  add_library(ftkit::ftrt STATIC IMPORTED)
  set_target_properties(ftkit::ftrt PROPERTIES
    IMPORTED_LOCATION "${_ftkit_lib}"
    INTERFACE_INCLUDE_DIRECTORIES "${_ftkit_prefix}/include"
    # -u __fentry__: a program whose only instrumented code is in a shared library still
    # links the runtime
    INTERFACE_LINK_OPTIONS "LINKER:-u,__fentry__"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS}")
endif()

function(ftkit_instrument target)
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:C,CXX>:${FTKIT_INSTRUMENT_FLAGS}>")
  # gcc turns -fipa-ra back on for functions with an optimize attribute, even under -pg
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANG_AND_ID:C,GNU>:-fno-ipa-ra>
    $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-fno-ipa-ra>)
  set_property(TARGET ${target} PROPERTY C_COMPILER_LAUNCHER "${FTKIT_LAUNCH}")
  set_property(TARGET ${target} PROPERTY CXX_COMPILER_LAUNCHER "${FTKIT_LAUNCH}")
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "EXECUTABLE")
    ftkit_link_runtime(${target})
  endif()
  if(_type STREQUAL "EXECUTABLE" OR _type STREQUAL "SHARED_LIBRARY" OR _type STREQUAL "MODULE_LIBRARY")
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND "${FTKIT_FTLINK}" "$<TARGET_FILE:${target}>" VERBATIM)
  endif()
endfunction()

# The runtime goes into the executable only (shared libraries call the executable's
# __fentry__): use this for a program that is not instrumented itself but uses
# instrumented libraries; ftkit_instrument() calls it for instrumented executables.
function(ftkit_link_runtime target)
  target_link_libraries(${target} PRIVATE ftkit::ftrt)
  set_property(TARGET ${target} PROPERTY ENABLE_EXPORTS ON) # -rdynamic: libraries find __fentry__
endfunction()
