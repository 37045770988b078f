// The learner's header in a second translation unit of the test binary, beside
// vm_under_test.cpp: a function or variable it defines at namespace scope without `inline` is
// then defined twice, and the link says so, as it would in any program that includes the header
// from two files.
#include "virtual_memory.hpp"
