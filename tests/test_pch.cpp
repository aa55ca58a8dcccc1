// The translation unit that builds the test programs' shared precompiled header (see
// tests/CMakeLists.txt); it has nothing of its own.
