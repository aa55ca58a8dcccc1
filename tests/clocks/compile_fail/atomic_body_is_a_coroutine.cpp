// An atomic body that is a coroutine could suspend while holding the place's lock: refused.
#include <apgas/apgas.hpp>

apgas::task<> twice(int& x) {
  co_await apgas::atomic([&]() -> apgas::task<> {
    ++x;
    co_return;
  });
}

int main() {}
