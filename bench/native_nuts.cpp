// sampler/nuts.ab by hand (see native_nuts.h): each function below is the nuts.ab function of
// the same name, each float expression kept in the source's order and association, each
// uniform()/normal() taken from the chain's Philox lane where nuts.ab takes it. The language's
// semantics it relies on (ir/ops.cpp, ir/exec.cpp): + - * / sqrt are IEEE float32; exp, log, pow
// are ab_exp, ab_log, ab_pow; min(a, b) is `b < a ? b : a` and max(a, b) is `b < a ? a : b`;
// dot(x, y) is one element of a product (product_element, autobatch/numerics.h: partials over
// blocks of 64 terms from +0, added in order to a total from +0); `x += e` is `x = x + (e)`.
#include "bench/native_nuts.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <thread>

#include "autobatch/numerics.h"
#include "bench/native.h"

namespace ab::bench {
namespace {

using Vec = std::vector<float>;

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

float min_of(float a, float b) {
  return b < a ? b : a;
}
float max_of(float a, float b) {
  return b < a ? a : b;
}

float dot(const float* x, const float* y, size_t n) {
  return product_element(
      static_cast<uint32_t>(n), [&](uint32_t i) { return x[i]; }, [&](uint32_t i) { return y[i]; });
}

// dot(x * scale, y), the product array formed first as the language does.
float scaled_dot(const Vec& x, const Vec& scale, const Vec& y) {
  return product_element(
      static_cast<uint32_t>(x.size()), [&](uint32_t i) { return x[i] * scale[i]; },
      [&](uint32_t i) { return y[i]; });
}

struct Point {
  Vec q, p;
  float logp = 0;
  Vec grad;
};

struct Tree {
  Point minus, plus, proposal;
  Vec rho;
  float log_weight = 0, sum_accept = 0;
  int32_t leaves = 0, grads = 0;
  bool stop = false, divergent = false;
};

struct Transition {
  Point point;
  float accept = 0, energy = 0;
  int32_t depth = 0, grads = 0;
  bool divergent = false;
};

struct Adapt {
  float mu = 0, log_eps = 0, log_eps_bar = 0, h_bar = 0;
  int32_t t = 0;
};

class Sampler {
 public:
  Sampler(const NutsModel& model, const NutsSettings& settings, uint64_t seed, uint32_t chain)
      : model_(model), settings_(settings), D_(model.dimension), rng_{seed, chain} {}

  NutsChainResult run(const float* init);

 private:
  Point point(Vec q, Vec p) {
    Point s;
    s.grad.assign(D_, 0.0f);
    s.logp = model_.value_and_grad(q.data(), s.grad.data());
    s.q = std::move(q);
    s.p = std::move(p);
    return s;
  }

  float hamiltonian(const Point& s) const {
    return -s.logp + 0.5f * scaled_dot(s.p, inv_metric_, s.p);
  }

  Point leapfrog(const Point& s, float eps) const {
    const float half = 0.5f * eps;
    Point next;
    next.p.resize(D_);
    next.q.resize(D_);
    next.grad.assign(D_, 0.0f);
    for (uint32_t i = 0; i < D_; ++i)
      next.p[i] = s.p[i] + s.grad[i] * half;  // p_half
    for (uint32_t i = 0; i < D_; ++i)
      next.q[i] = s.q[i] + next.p[i] * inv_metric_[i] * eps;
    next.logp = model_.value_and_grad(next.q.data(), next.grad.data());
    for (uint32_t i = 0; i < D_; ++i)
      next.p[i] = next.p[i] + next.grad[i] * half;
    return next;
  }

  static float log_add(float a, float b) {
    const float m = max_of(a, b);
    if (m == kMinusInfinity) return m;
    return m + ab_log(ab_exp(a - m) + ab_exp(b - m));
  }

  bool turns(const Vec& p_minus, const Vec& p_plus, const Vec& rho) const {
    return !(scaled_dot(p_minus, inv_metric_, rho) > 0.0f &&
             scaled_dot(p_plus, inv_metric_, rho) > 0.0f);
  }

  static Vec sum(const Vec& a, const Vec& b) {
    Vec out(a.size());
    for (size_t i = 0; i < a.size(); ++i)
      out[i] = a[i] + b[i];
    return out;
  }

  bool merge_turns(const Tree& left, const Tree& right) const {
    return turns(left.minus.p, right.plus.p, sum(left.rho, right.rho)) ||
           turns(left.minus.p, right.minus.p, sum(left.rho, right.minus.p)) ||
           turns(left.plus.p, right.plus.p, sum(right.rho, left.plus.p));
  }

  Tree leaf(const Point& s, float eps, int32_t steps, float h0) const {
    Point next = s;
    for (int32_t i = 0; i < steps; ++i)
      next = leapfrog(next, eps);
    const float delta = hamiltonian(next) - h0;
    const bool divergent = !(delta <= 1000.0f) || !(delta > -1.0e30f);
    float log_weight = -delta;
    float accept = min_of(1.0f, ab_exp(-delta));
    if (divergent) {
      log_weight = kMinusInfinity;
      accept = 0.0f;
    }
    Tree tree;
    tree.minus = next;
    tree.plus = next;
    tree.rho = next.p;
    tree.proposal = std::move(next);
    tree.log_weight = log_weight;
    tree.sum_accept = accept;
    tree.leaves = 1;
    tree.grads = steps;
    tree.stop = divergent;
    tree.divergent = divergent;
    return tree;
  }

  Tree build_tree(const Point& s, float eps, int32_t depth, int32_t steps, float h0) {
    if (depth == 0) return leaf(s, eps, steps, h0);
    Tree first = build_tree(s, eps, depth - 1, steps, h0);
    if (first.stop) return first;
    const Point& edge = eps < 0.0f ? first.minus : first.plus;
    Tree second = build_tree(edge, eps, depth - 1, steps, h0);
    bool stop = second.stop;
    if (!stop) stop = eps < 0.0f ? merge_turns(second, first) : merge_turns(first, second);
    // nuts.ab's `tree` starts as a copy of `first`, whose fields are read below only before
    // tree's same field is assigned: so `first` itself can become `tree`.
    Tree tree = std::move(first);
    tree.rho = sum(tree.rho, second.rho);
    if (eps < 0.0f)
      tree.minus = std::move(second.minus);
    else
      tree.plus = std::move(second.plus);
    tree.log_weight = log_add(tree.log_weight, second.log_weight);
    if (ab_log(rng_.uniform()) < second.log_weight - tree.log_weight)
      tree.proposal = std::move(second.proposal);
    tree.sum_accept = tree.sum_accept + second.sum_accept;
    tree.leaves = tree.leaves + second.leaves;
    tree.grads = tree.grads + second.grads;
    tree.divergent = second.divergent;
    tree.stop = stop;
    return tree;
  }

  // A fresh momentum for `s`, as both nuts_transition and nuts_find_step_size draw it.
  void draw_momentum(Point& s) {
    for (uint32_t i = 0; i < D_; ++i)
      s.p[i] = rng_.normal() / std::sqrt(inv_metric_[i]);
  }

  Transition transition(const Point& start_q, float eps) {
    Point start = start_q;
    draw_momentum(start);
    const float h0 = hamiltonian(start);
    Tree tree;
    tree.minus = start;
    tree.plus = start;
    tree.rho = start.p;
    tree.proposal = std::move(start);
    tree.log_weight = 0.0f;
    tree.sum_accept = 0.0f;
    int32_t depth = 0;
    while (depth < static_cast<int32_t>(settings_.max_depth)) {
      float direction = 1.0f;
      if (rng_.uniform() < 0.5f) direction = -1.0f;
      const Point& edge = direction < 0.0f ? tree.minus : tree.plus;
      Tree sub =
          build_tree(edge, direction * eps, depth, static_cast<int32_t>(settings_.leaf_steps), h0);
      tree.grads += sub.grads;
      tree.sum_accept = tree.sum_accept + sub.sum_accept;
      tree.leaves += sub.leaves;
      depth += 1;
      if (sub.stop) {
        tree.divergent = sub.divergent;
        break;
      }
      if (ab_log(rng_.uniform()) < sub.log_weight - tree.log_weight)
        tree.proposal = std::move(sub.proposal);
      tree.log_weight = log_add(tree.log_weight, sub.log_weight);
      const bool turned = direction < 0.0f ? merge_turns(sub, tree) : merge_turns(tree, sub);
      if (direction < 0.0f)
        tree.minus = std::move(sub.minus);
      else
        tree.plus = std::move(sub.plus);
      tree.rho = sum(tree.rho, sub.rho);
      if (turned) break;
    }
    Transition t;
    t.accept = 0.0f;
    if (tree.leaves > 0) t.accept = tree.sum_accept / static_cast<float>(tree.leaves);
    t.energy = hamiltonian(tree.proposal);
    t.point = std::move(tree.proposal);
    t.depth = depth;
    t.grads = tree.grads;
    t.divergent = tree.divergent;
    return t;
  }

  float find_step_size(const Point& s, float eps0) {
    float eps = eps0;
    Point start = s;
    draw_momentum(start);
    const float h0 = hamiltonian(start);
    float direction = 0.0f;
    for (int k = 0; k < 50; ++k) {
      const Point next = leapfrog(start, eps);
      const float delta = hamiltonian(next) - h0;
      const bool good = -delta > -0.6931472f;
      if (direction == 0.0f) {
        direction = -1.0f;
        if (good) direction = 1.0f;
      }
      if (direction > 0.0f && !good) return eps;
      if (direction < 0.0f && good) return eps;
      if (direction > 0.0f)
        eps = eps * 2.0f;
      else
        eps = eps * 0.5f;
      if (eps > 1.0e7f || eps < 1.0e-10f) return eps;
    }
    return eps;
  }

  static Adapt adapt_start(float eps) {
    Adapt a;
    a.mu = ab_log(10.0f * eps);
    a.log_eps = ab_log(eps);
    a.log_eps_bar = 0.0f;
    a.h_bar = 0.0f;
    a.t = 0;
    return a;
  }

  static Adapt adapt_update(const Adapt& a, float accept, float target) {
    Adapt next = a;
    next.t += 1;
    const auto t = static_cast<float>(next.t);
    const float eta = 1.0f / (t + 10.0f);
    next.h_bar = (1.0f - eta) * a.h_bar + eta * (target - accept);
    next.log_eps = a.mu - std::sqrt(t) / 0.05f * next.h_bar;
    const float x = ab_pow(t, -0.75f);
    next.log_eps_bar = x * next.log_eps + (1.0f - x) * a.log_eps_bar;
    return next;
  }

  const NutsModel& model_;
  const NutsSettings& settings_;
  const uint32_t D_;
  LaneStream rng_;
  Vec inv_metric_;
};

NutsChainResult Sampler::run(const float* init) {
  Vec q(D_, 0.0f);
  if (init) std::copy(init, init + D_, q.begin());
  if (!init)
    for (uint32_t i = 0; i < D_; ++i)
      q[i] = 4.0f * rng_.uniform() - 2.0f;
  inv_metric_.assign(D_, 1.0f);
  Point current = point(std::move(q), Vec(D_, 0.0f));
  int32_t grads = 1;
  float eps = settings_.step_size;
  if (settings_.search_step) eps = find_step_size(current, eps);
  Adapt adapt = adapt_start(eps);

  const auto warmup = static_cast<int32_t>(settings_.warmup);
  const auto draws = static_cast<int32_t>(settings_.draws);
  const bool buffered = settings_.adapt_metric && warmup >= 150;
  const int32_t last_end = warmup - 50;
  int32_t window_start = 75;
  int32_t window_size = 25;
  int32_t window_end = window_start + window_size;
  if (window_end + 2 * window_size > last_end) window_end = last_end;
  int32_t count = 0;
  Vec mean(D_, 0.0f), m2(D_, 0.0f), d(D_);

  NutsChainResult result;
  result.draws.reserve(settings_.draws);
  int32_t divergences = 0;
  for (int32_t i = 0; i < warmup + draws; ++i) {
    float jittered = eps;
    if (settings_.step_jitter > 0.0f)
      jittered = eps * (1.0f + settings_.step_jitter * (2.0f * rng_.uniform() - 1.0f));
    Transition t = transition(current, jittered);
    current = std::move(t.point);
    grads += t.grads;
    if (i < warmup) {
      adapt = adapt_update(adapt, t.accept, settings_.target_accept);
      eps = ab_exp(adapt.log_eps);
      if (buffered && i >= window_start && i < window_end) {
        // Welford's running mean and variance.
        count += 1;
        const auto n = static_cast<float>(count);
        for (uint32_t j = 0; j < D_; ++j)
          d[j] = current.q[j] - mean[j];
        for (uint32_t j = 0; j < D_; ++j)
          mean[j] = mean[j] + d[j] / n;
        for (uint32_t j = 0; j < D_; ++j)
          m2[j] = m2[j] + d[j] * (current.q[j] - mean[j]);
      }
      if (buffered && i + 1 == window_end) {
        const auto n = static_cast<float>(count);
        const float shrink = n / (n + 5.0f);
        const float floor = 0.001f * (5.0f / (n + 5.0f));
        for (uint32_t j = 0; j < D_; ++j)
          inv_metric_[j] = (m2[j] / (n - 1.0f)) * shrink + floor;
        count = 0;
        mean.assign(D_, 0.0f);
        m2.assign(D_, 0.0f);
        eps = find_step_size(current, eps);
        adapt = adapt_start(eps);
        window_start = window_end;
        window_size *= 2;
        window_end = window_start + window_size;
        if (window_end + 2 * window_size > last_end) window_end = last_end;
      }
      if (i + 1 == warmup) eps = ab_exp(adapt.log_eps_bar);
    } else {
      if (t.divergent) divergences += 1;
      NutsDraw draw;
      draw.q = current.q;
      draw.accept = t.accept;
      draw.step_size = eps;
      draw.energy = t.energy;
      draw.depth = t.depth;
      draw.grads = t.grads;
      draw.divergent = t.divergent;
      result.draws.push_back(std::move(draw));
    }
  }
  result.step_size = eps;
  result.inv_metric = inv_metric_;
  result.grads = grads;
  result.divergences = divergences;
  return result;
}

}  // namespace

NutsChainResult native_nuts_chain(const NutsModel& model, const NutsSettings& settings,
                                  uint64_t seed, uint32_t chain, const float* init) {
  return Sampler(model, settings, seed, chain).run(init);
}

NutsRunResult native_nuts_chains(const NutsModel& model, const NutsSettings& settings,
                                 uint64_t seed, uint32_t chains, const float* inits,
                                 uint32_t threads) {
  const auto started = std::chrono::steady_clock::now();
  NutsRunResult out;
  out.chains.resize(chains);
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, chains);
  std::atomic<uint32_t> next{0};
  auto worker = [&] {
    for (uint32_t c = next++; c < chains; c = next++)
      out.chains[c] = native_nuts_chain(model, settings, seed, c,
                                        inits ? inits + uint64_t{c} * model.dimension : nullptr);
  };
  std::vector<std::thread> pool;
  for (uint32_t k = 0; k < threads; ++k)
    pool.emplace_back(worker);
  for (std::thread& t : pool)
    t.join();
  for (const NutsChainResult& c : out.chains)
    out.grads += static_cast<uint64_t>(c.grads);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

// ---- The models -------------------------------------------------------------------------------

NutsModel nuts_banana_model() {
  constexpr float B = 0.03f;
  return {2, [](const float* q, float* grad) {
            const float u = q[1] + B * (q[0] * q[0] - 100.0f);
            const float value = -q[0] * q[0] / 200.0f - 0.5f * u * u;
            grad[0] = -q[0] / 100.0f - 2.0f * B * q[0] * u;
            grad[1] = -u;
            return value;
          }};
}

NutsModel nuts_gaussian_iid_model() {
  return {3, [](const float* q, float* grad) {
            const float value = -0.5f * dot(q, q, 3);
            for (int i = 0; i < 3; ++i)
              grad[i] = -q[i];
            return value;
          }};
}

NutsModel nuts_gaussian_scaled_model() {
  constexpr float SD0 = 1.0f, SD1 = 10.0f;
  return {2, [](const float* q, float* grad) {
            grad[0] = -q[0] / (SD0 * SD0);
            grad[1] = -q[1] / (SD1 * SD1);
            return 0.5f * dot(q, grad, 2);
          }};
}

NutsModel nuts_gaussian_correlated_model() {
  constexpr float RHO = 0.95f;
  constexpr float SCALE = 1.0f / (1.0f - RHO * RHO);
  return {2, [](const float* q, float* grad) {
            grad[0] = -SCALE * (q[0] - RHO * q[1]);
            grad[1] = -SCALE * (q[1] - RHO * q[0]);
            return 0.5f * dot(q, grad, 2);
          }};
}

// ---- correlated_gaussian_loop.ab and logistic_regression_loop.ab: loops, hand-written gradients

NutsModel nuts_correlated_gaussian_loop_model(std::vector<float> precision, uint32_t dimension) {
  auto P = std::make_shared<const Vec>(std::move(precision));
  return {dimension, [P, dimension](const float* q, float* grad) {
            for (uint32_t i = 0; i < dimension; ++i)
              grad[i] = -dot(P->data() + uint64_t{i} * dimension, q, dimension);
            return 0.5f * dot(q, grad, dimension);
          }};
}

namespace {

// out[r] = dot(row r of `rows`, q) for `count` rows of length D, each in the language's dot
// order (product_element); four rows at a time so that four independent sums are in flight (the
// order within each sum, hence every bit, is unchanged).
void row_dots(const float* rows, const float* q, uint32_t D, uint32_t count, float* out) {
  uint32_t r = 0;
  for (; r + 4 <= count; r += 4) {
    const float* x0 = rows + uint64_t{r} * D;
    const float* x[4] = {x0, x0 + D, x0 + 2 * D, x0 + 3 * D};
    float total[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for_each_product_block(D, [&](uint32_t first, uint32_t end) {
      float partial[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (uint32_t j = first; j < end; ++j)
        for (int k = 0; k < 4; ++k)
          partial[k] = partial[k] + x[k][j] * q[j];
      for (int k = 0; k < 4; ++k)
        total[k] = total[k] + partial[k];
    });
    std::copy_n(total, 4, out + r);
  }
  for (; r < count; ++r)
    out[r] = dot(rows + uint64_t{r} * D, q, D);
}

// sum[j] = sum[j] + x[j] * scale for every j (independent sums: vectorisable as written).
void add_scaled(float* __restrict sum, const float* __restrict x, float scale, uint32_t D) {
  for (uint32_t j = 0; j < D; ++j)
    sum[j] = sum[j] + x[j] * scale;
}

}  // namespace

NutsModel nuts_logistic_regression_loop_model(std::vector<float> X, std::vector<float> y,
                                              uint32_t dimension, uint32_t block) {
  constexpr float PRIOR_VAR = 25.0f;
  auto Xs = std::make_shared<const Vec>(std::move(X));
  auto ys = std::make_shared<const Vec>(std::move(y));
  return {dimension, [Xs, ys, dimension, block](const float* q, float* grad) {
            const uint32_t D = dimension;
            const auto N = static_cast<uint32_t>(ys->size());
            float value = -0.5f * dot(q, q, D) / PRIOR_VAR;
            for (uint32_t j = 0; j < D; ++j)
              grad[j] = q[j] * (-1.0f / PRIOR_VAR);
            thread_local Vec block_grad, z;
            block_grad.resize(D);
            z.resize(block);
            for (uint32_t b = 0; b < N / block; ++b) {
              float block_value = 0.0f;
              std::fill(block_grad.begin(), block_grad.end(), 0.0f);
              const float* block_rows = Xs->data() + uint64_t{b} * block * D;
              row_dots(block_rows, q, D, block, z.data());
              for (uint32_t r = 0; r < block; ++r) {
                const float* x = block_rows + uint64_t{r} * D;
                const float yi = (*ys)[b * block + r];
                const float e = ab_exp(-std::fabs(z[r]));
                const float softplus = max_of(z[r], 0.0f) + ab_log(1.0f + e);
                const float s = (1.0f + (e - 1.0f) * (z[r] < 0.0f ? 1.0f : 0.0f)) / (1.0f + e);
                block_value = block_value + (yi * z[r] - softplus);
                const float residual = yi - s;
                add_scaled(block_grad.data(), x, residual, D);
              }
              value = value + block_value;
              for (uint32_t j = 0; j < D; ++j)
                grad[j] = grad[j] + block_grad[j];
            }
            return value;
          }};
}

// ---- correlated_gaussian.ab and logistic_regression.ab: products, derived gradients ----------
//
// Each is the derived gradient op for op as the compiler writes it (`autobatch ir` prints it):
// the forward ops, then each adjoint starting from +0 and added to in reverse op order, products
// in the language's summation order (product_element / for_each_product_block,
// autobatch/numerics.h).

namespace {

// out[m] = (A @ v)[m] for the `rows` x K matrix A: every row in the product order, four rows at a
// time so that four independent sums are in flight (each sum's order, hence every bit, unchanged).
void matrix_vector(const float* A, const float* v, uint32_t rows, uint32_t K, float* out) {
  uint32_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* a[4] = {A + uint64_t{r} * K, A + uint64_t{r + 1} * K, A + uint64_t{r + 2} * K,
                         A + uint64_t{r + 3} * K};
    float total[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for_each_product_block(K, [&](uint32_t first, uint32_t end) {
      float partial[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      for (uint32_t k = first; k < end; ++k)
        for (int i = 0; i < 4; ++i)
          partial[i] = partial[i] + a[i][k] * v[k];
      for (int i = 0; i < 4; ++i)
        total[i] = total[i] + partial[i];
    });
    for (int i = 0; i < 4; ++i)
      out[r + i] = total[i];
  }
  for (; r < rows; ++r) {
    const float* a = A + uint64_t{r} * K;
    out[r] = product_element(
        K, [&](uint32_t k) { return a[k]; }, [&](uint32_t k) { return v[k]; });
  }
}

// out[k] = (v @ A)[k] for the M x `cols` matrix A: each block of rows adds into a partial per
// column, row by row (vectorisable over the columns), then the partials into the totals.
void vector_matrix(const float* v, const float* A, uint32_t M, uint32_t cols, float* out) {
  thread_local Vec partial;
  partial.resize(cols);
  std::fill(out, out + cols, 0.0f);
  for_each_product_block(M, [&](uint32_t first, uint32_t end) {
    std::fill(partial.begin(), partial.end(), 0.0f);
    for (uint32_t m = first; m < end; ++m)
      add_scaled(partial.data(), A + uint64_t{m} * cols, v[m], cols);
    for (uint32_t k = 0; k < cols; ++k)
      out[k] = out[k] + partial[k];
  });
}

}  // namespace

NutsModel nuts_correlated_gaussian_model(std::vector<float> precision, uint32_t dimension) {
  auto P = std::make_shared<const Vec>(std::move(precision));
  return {dimension, [P, dimension](const float* q, float* grad) {
            const uint32_t D = dimension;
            thread_local Vec pq, pq_adj, product;
            pq.resize(D);
            pq_adj.resize(D);
            product.resize(D);
            // -0.5 * dot(q, precision @ q)
            matrix_vector(P->data(), q, D, D, pq.data());
            const float value = -0.5f * dot(q, pq.data(), D);
            const float dot_adj = 0.0f + 1.0f * -0.5f;
            for (uint32_t k = 0; k < D; ++k) {
              grad[k] = 0.0f + pq[k] * dot_adj;   // dot's first operand, q
              pq_adj[k] = 0.0f + q[k] * dot_adj;  // its second, precision @ q
            }
            vector_matrix(pq_adj.data(), P->data(), D, D, product.data());  // q' += pq' @ P
            for (uint32_t k = 0; k < D; ++k)
              grad[k] = grad[k] + product[k];
            return value;
          }};
}

NutsModel nuts_logistic_regression_model(std::vector<float> X, std::vector<float> y,
                                         uint32_t dimension) {
  constexpr float PRIOR_VAR = 25.0f;
  auto Xs = std::make_shared<const Vec>(std::move(X));
  auto ys = std::make_shared<const Vec>(std::move(y));
  return {dimension, [Xs, ys, dimension](const float* q, float* grad) {
            const uint32_t D = dimension;
            const auto N = static_cast<uint32_t>(ys->size());
            const Vec& Y = *ys;
            thread_local Vec z, z_adj, product;
            z.resize(N);
            z_adj.resize(N);
            product.resize(D);
            // z = X @ q;  sum(y * z - log1p_exp(z)) - 0.5 * dot(q, q) / PRIOR_VAR
            matrix_vector(Xs->data(), q, N, D, z.data());
            float data_sum = 0.0f;
            for (uint32_t m = 0; m < N; ++m)
              data_sum = data_sum + (Y[m] * z[m] - ab_log1p_exp(z[m]));
            const float value = data_sum - 0.5f * dot(q, q, D) / PRIOR_VAR;
            // The adjoints, in reverse: the prior's term, dot(q, q)'s two operands, then z's.
            const float prior_adj = 0.0f + -1.0f;
            const float scaled_adj = 0.0f + prior_adj / PRIOR_VAR;
            const float dot_adj = 0.0f + scaled_adj * 0.5f;
            for (uint32_t j = 0; j < D; ++j) {
              grad[j] = 0.0f + q[j] * dot_adj;
              grad[j] = grad[j] + q[j] * dot_adj;
            }
            const float sum_adj = 0.0f + 1.0f;        // sum's operand, y * z - log1p_exp(z)
            const float mul_adj = 0.0f + sum_adj;     // y * z
            const float log1p_adj = 0.0f + -sum_adj;  // log1p_exp(z)
            for (uint32_t m = 0; m < N; ++m)
              z_adj[m] = (0.0f + log1p_adj * ab_inv_logit(z[m])) + mul_adj * Y[m];
            vector_matrix(z_adj.data(), Xs->data(), N, D, product.data());  // q' += z' @ X
            for (uint32_t j = 0; j < D; ++j)
              grad[j] = grad[j] + product[j];
            return value;
          }};
}

}  // namespace ab::bench
