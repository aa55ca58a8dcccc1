// Must not compile: each future is awaited once, so when_all takes its vector by value.
#include <apgas/apgas.hpp>

#include <vector>

apgas::task<> await_all(std::vector<apgas::future<int>>& fs) { (void)co_await apgas::when_all(fs); }
