// Must not compile: at_each_place gathers values, and this function returns none.
#include <apgas/apgas.hpp>

apgas::task<> gather_nothing() {
  (void)co_await apgas::at_each_place([] {});
}
