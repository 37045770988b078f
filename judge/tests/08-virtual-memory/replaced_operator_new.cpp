// The exception-safety tests of this exercise make the global operator new fail on purpose
// (failing_new.hpp). A replacement of operator new must be defined in exactly one translation
// unit of the test binary, and the stages are compiled two to a unit: this file is that one.
#include "failing_new.cpp"
