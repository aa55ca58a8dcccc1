// UTS trees: the geometric distribution's parameters by depth, names and published sizes.
#include "apgas_apps/uts.hpp"
#include <fmt/format.h>

namespace apgas_apps::uts {

namespace {

/// Depths whose log(1 - p) is kept in a table (deeper ones, rare, are computed each time).
constexpr std::uint32_t k_table_depths = 64;

struct sample {
  const char* name;
  tree_params params;
  std::uint64_t nodes;
};

tree_params geometric_fixed(std::int32_t depth, std::int32_t seed) {
  tree_params p;
  p.type = tree_type::geometric;
  p.shape = geo_shape::fixed;
  p.gen_mx = depth;
  p.b0 = 4.0;
  p.seed = seed;
  return p;
}

tree_params binomial(double b0, double q, std::int32_t m, std::int32_t seed) {
  tree_params p;
  p.type = tree_type::binomial;
  p.b0 = b0;
  p.nonleaf_prob = q;
  p.nonleaf_bf = m;
  p.seed = seed;
  return p;
}

/// The samples of the UTS distribution whose sizes this implementation is checked against.
const sample k_samples[] = {
    {"T1", geometric_fixed(10, 19), 4'130'071},
    {"T1L", geometric_fixed(13, 29), 102'181'082},
    {"T3", binomial(2000, 0.124875, 8, 42), 4'112'897},
};

/// The parameters that matter for the tree's type, compared.
bool same_tree(const tree_params& a, const tree_params& b) {
  if (a.type != b.type || a.seed != b.seed || a.b0 != b.b0) return false;
  switch (a.type) {
  case tree_type::binomial:
    return a.nonleaf_prob == b.nonleaf_prob && a.nonleaf_bf == b.nonleaf_bf;
  case tree_type::geometric:
    return a.shape == b.shape && a.gen_mx == b.gen_mx;
  case tree_type::hybrid:
    return a.shape == b.shape && a.gen_mx == b.gen_mx && a.nonleaf_prob == b.nonleaf_prob &&
           a.nonleaf_bf == b.nonleaf_bf && a.shift_depth == b.shift_depth;
  case tree_type::balanced:
    return a.gen_mx == b.gen_mx;
  }
  return false;
}

const char* shape_name(geo_shape s) {
  switch (s) {
  case geo_shape::linear:
    return "linear";
  case geo_shape::expdec:
    return "expdec";
  case geo_shape::cyclic:
    return "cyclic";
  case geo_shape::fixed:
    return "fixed";
  }
  return "?";
}

} // namespace

tree::tree(const tree_params& p) : m_p(p) {
  // The reference: floor(b0) children, truncated to ceil(b0).
  m_binomial_root = std::min(static_cast<int>(std::floor(p.b0)), static_cast<int>(std::ceil(p.b0)));
  if (p.type == tree_type::geometric || p.type == tree_type::hybrid) {
    m_log_q.reserve(k_table_depths);
    for (std::uint32_t d = 0; d < k_table_depths; ++d) m_log_q.push_back(log_one_minus_p(d));
  }
}

double tree::log_one_minus_p(std::uint32_t depth) const noexcept {
  // As the reference's uts_numChildren_geo, operation for operation (the same doubles).
  double b_i = m_p.b0;
  const int d = static_cast<int>(depth);
  if (d > 0) {
    switch (m_p.shape) {
    case geo_shape::expdec:
      b_i = m_p.b0 * std::pow(static_cast<double>(d),
                              -std::log(m_p.b0) / std::log(static_cast<double>(m_p.gen_mx)));
      break;
    case geo_shape::cyclic:
      if (d > 5 * m_p.gen_mx) {
        b_i = 0.0;
        break;
      }
      b_i = std::pow(m_p.b0, std::sin(2.0 * 3.141592653589793 * static_cast<double>(d) /
                                      static_cast<double>(m_p.gen_mx)));
      break;
    case geo_shape::fixed:
      b_i = d < m_p.gen_mx ? m_p.b0 : 0;
      break;
    case geo_shape::linear:
      b_i = m_p.b0 * (1.0 - static_cast<double>(d) / static_cast<double>(m_p.gen_mx));
      break;
    }
  }
  const double p = 1.0 / (1.0 + b_i);
  return std::log(1 - p);
}

std::string tree_params::describe() const {
  std::string s;
  for (const sample& x : k_samples)
    if (same_tree(x.params, *this)) s = fmt::format("{}: ", x.name);
  switch (type) {
  case tree_type::binomial:
    return s + fmt::format("binomial b0={} q={} m={} r={}", b0, nonleaf_prob, nonleaf_bf, seed);
  case tree_type::geometric:
    return s + fmt::format("geometric {} b0={} d={} r={}", shape_name(shape), b0, gen_mx, seed);
  case tree_type::hybrid:
    return s + fmt::format("hybrid {} b0={} d={} q={} m={} f={} r={}", shape_name(shape), b0,
                           gen_mx, nonleaf_prob, nonleaf_bf, shift_depth, seed);
  case tree_type::balanced:
    return s + fmt::format("balanced b0={} d={}", b0, gen_mx);
  }
  return s;
}

std::uint64_t tree_params::known_nodes() const noexcept {
  for (const sample& x : k_samples)
    if (same_tree(x.params, *this)) return x.nodes;
  return 0;
}

} // namespace apgas_apps::uts
