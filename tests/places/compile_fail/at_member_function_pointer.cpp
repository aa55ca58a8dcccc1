// Must not compile: a non-static member function needs an object, which is not at the other place.
#include <apgas/apgas.hpp>

struct account {
  long balance = 0;
  long deposit(long x) { return balance += x; }
};

apgas::task<long> call_member() { co_return co_await apgas::at(1, &account::deposit, 5L); }
