// Must not compile: the function of async_at is named by its type, so it cannot capture.
#include <apgas/apgas.hpp>

apgas::task<> send_capture(int x) {
  co_await apgas::async_at(1, [x] { (void)x; });
}
