# Sets ALLOCLAB_SANITIZER_ENV to the NAME=value list of judge/sanitizer_options.env, with the
# catalog's memory limit filled in: the environment ctest gives every test, the same as the judge's.
# CMakeLists.txt includes this file; `cmake -P` on it prints the list (the judge's self-test
# compares it with what judge/lab/sanitizers.py reads).
get_filename_component(_alloclab_judge "${CMAKE_CURRENT_LIST_DIR}" ABSOLUTE)
file(STRINGS "${_alloclab_judge}/catalog.toml" _alloclab_memory REGEX "^memory_mb *= *[0-9]+")
string(REGEX REPLACE "^memory_mb *= *([0-9]+).*" "\\1" _alloclab_memory "${_alloclab_memory}")
if(NOT _alloclab_memory MATCHES "^[0-9]+$")
  message(FATAL_ERROR "judge/catalog.toml: [limits] memory_mb not found")
endif()
file(STRINGS "${_alloclab_judge}/sanitizer_options.env" _alloclab_lines REGEX "^[A-Z]+_OPTIONS=")
set(ALLOCLAB_SANITIZER_ENV "")
foreach(_line IN LISTS _alloclab_lines)
  string(REPLACE "@memory_mb@" "${_alloclab_memory}" _line "${_line}")
  list(APPEND ALLOCLAB_SANITIZER_ENV "${_line}")
endforeach()
if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  foreach(_line IN LISTS ALLOCLAB_SANITIZER_ENV)
    message("${_line}")
  endforeach()
endif()
