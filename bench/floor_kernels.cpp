// The floor of a spawn (see floor_kernels.hpp): fib with a minimal coroutine per call, frames
// from a free list, and the parent's continuation pushed on an array and popped at the child's
// end, as a work-first spawn does, but on one thread: no fence, no count, no finish.
#include "floor_kernels.hpp"

#include <coroutine>
#include <cstddef>
#include <exception>
#include <new>
#include <utility>
#include <vector>

namespace apgas_bench::floor_peer {

namespace {

/// Frames of one size class, recycled (the run is one thread).
struct free_list {
  struct block {
    block* next;
  };
  block* head = nullptr;
  std::size_t size = 0;
  ~free_list() {
    while (head != nullptr) ::operator delete(std::exchange(head, head->next));
  }
  void* take(std::size_t bytes) {
    if (head != nullptr && bytes <= size) return std::exchange(head, head->next);
    size = std::max(size, bytes);
    return ::operator new(size);
  }
  void give(void* p) noexcept { head = new (p) block{head}; }
};
free_list g_frames;

/// The owner's end of a deque: a push and a pop per spawn, nothing for thieves.
struct owner_stack {
  std::vector<void*> items = std::vector<void*>(1024);
  std::size_t top = 0;
  void push(void* p) noexcept {
    if (top == items.size()) [[unlikely]]
      grow();
    items[top++] = p;
  }
  [[gnu::noinline]] void grow() noexcept {
    try {
      items.resize(2 * items.size());
    } catch (...) {
      std::terminate();
    }
  }
  void* pop() noexcept { return items[--top]; }
};
owner_stack g_stack;

struct task {
  struct promise_type {
    long value = 0;
    std::coroutine_handle<> continuation;
    bool spawned = false; ///< its caller's continuation is on g_stack
    static void* operator new(std::size_t bytes) { return g_frames.take(bytes); }
    static void operator delete(void* p) noexcept { g_frames.give(p); }
    task get_return_object() noexcept {
      return task{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct final_awaiter {
      bool await_ready() noexcept { return false; }
      [[gnu::always_inline]] std::coroutine_handle<>
      await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        promise_type& p = h.promise();
        // A spawned child joins its parent by popping the continuation it pushed.
        if (p.spawned) return std::coroutine_handle<>::from_address(g_stack.pop());
        return p.continuation;
      }
      void await_resume() noexcept {}
    };
    final_awaiter final_suspend() noexcept { return {}; }
    void return_value(long v) noexcept { value = v; }
    void unhandled_exception() noexcept { std::terminate(); }
  };
  std::coroutine_handle<promise_type> handle;
  explicit task(std::coroutine_handle<promise_type> h) noexcept : handle(h) {}
  task(task&& other) noexcept : handle(std::exchange(other.handle, nullptr)) {}
  task(const task&) = delete;
  ~task() {
    if (handle) handle.destroy();
  }
};

/// co_await spawned{t.handle}: pushes the caller's continuation, runs t, pops it back at t's
/// end. (The awaiters hold handles, not tasks: GCC 12 may destroy a co_await's temporary twice.)
struct spawned {
  std::coroutine_handle<task::promise_type> t;
  bool await_ready() noexcept { return false; }
  [[gnu::always_inline]] std::coroutine_handle<>
  await_suspend(std::coroutine_handle<> caller) noexcept {
    g_stack.push(caller.address());
    t.promise().spawned = true;
    return t;
  }
  long await_resume() noexcept { return t.promise().value; }
};

/// co_await called{t.handle}: a call in sequence.
struct called {
  std::coroutine_handle<task::promise_type> t;
  bool await_ready() noexcept { return false; }
  [[gnu::always_inline]] std::coroutine_handle<>
  await_suspend(std::coroutine_handle<> caller) noexcept {
    t.promise().continuation = caller;
    return t;
  }
  long await_resume() noexcept { return t.promise().value; }
};

task fib_rec(int n) {
  if (n < 2) co_return n;
  task first = fib_rec(n - 1);
  const long a = co_await spawned{first.handle};
  task second = fib_rec(n - 2);
  const long b = co_await called{second.handle};
  co_return a + b;
}

} // namespace

long fib(int n) {
  task root = fib_rec(n);
  root.handle.promise().continuation = std::noop_coroutine();
  root.handle.resume();
  return root.handle.promise().value;
}

} // namespace apgas_bench::floor_peer
