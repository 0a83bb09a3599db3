// Random test data the runtime tests share: uniform floats in [-1, 1) from a fixed seed.
#pragma once

#include <random>
#include <vector>

/// `n` floats drawn uniformly from [-1, 1) by std::mt19937 seeded with `seed`.
inline std::vector<float> randomData(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(g);
  return v;
}
