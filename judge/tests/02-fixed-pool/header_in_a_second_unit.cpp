// The learner's header in a second translation unit of the test binary, beside the seams
// (pool_under_test.cpp, and object_pool_under_test.cpp where the ObjectPool's tests are built): a
// function or variable it defines at namespace scope without `inline` is then defined twice, and
// the link says so, as it would in any program that includes the header from two files.
#include "fixed_pool.hpp"
