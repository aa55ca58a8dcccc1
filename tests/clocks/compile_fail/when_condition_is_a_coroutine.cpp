// A when condition that is a coroutine could suspend while holding the place's lock: refused.
#include <apgas/apgas.hpp>

apgas::task<> wait_for(bool& ready) {
  co_await apgas::when([&]() -> apgas::task<bool> { co_return ready; }, [] {});
}

int main() {}
