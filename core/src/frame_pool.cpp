// Out-of-line part of the frame pool: giving cached frames back when a thread exits.
#include "apgas/detail/frame_pool.hpp"

namespace apgas::detail {

frame_pool::~frame_pool() {
  for (std::size_t c = 0; c < k_classes; ++c) {
    while (free_block* b = m_heads[c]) {
      m_heads[c] = b->next;
      ::operator delete(b);
    }
  }
}

} // namespace apgas::detail
