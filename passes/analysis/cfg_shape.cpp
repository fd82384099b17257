#include "passes/analysis/cfg_shape.h"

#include <deque>

#include "passes/analysis/liveness.h"  // successors()

namespace ab {

CfgShape cfg_shape(const Function& fn) {
  const int nb = static_cast<int>(fn.blocks.size());
  CfgShape cfg;
  cfg.preds.assign(nb, {});
  for (int b = 0; b < nb; ++b)
    for (int s : successors(fn.blocks[b].term))
      cfg.preds[s].push_back(b);
  cfg.reach.assign(nb, std::vector<bool>(nb, false));
  for (int b = 0; b < nb; ++b) {
    std::deque<int> work(1, b);
    while (!work.empty()) {
      const int x = work.front();
      work.pop_front();
      for (int s : successors(fn.blocks[x].term))
        if (!cfg.reach[b][s]) {
          cfg.reach[b][s] = true;
          work.push_back(s);
        }
    }
  }
  // Dominators (dom[b][a]: a dominates b), by the iterative data-flow rule.
  cfg.dom.assign(nb, std::vector<bool>(nb, true));
  cfg.dom[0].assign(nb, false);
  cfg.dom[0][0] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (int b = 1; b < nb; ++b) {
      std::vector<bool> d(nb, !cfg.preds[b].empty());
      for (int p : cfg.preds[b])
        for (int a = 0; a < nb; ++a)
          d[a] = d[a] && cfg.dom[p][a];
      d[b] = true;
      if (d != cfg.dom[b]) {
        cfg.dom[b] = std::move(d);
        changed = true;
      }
    }
  }
  // Loop headers counted by iterations: two predecessors, a back edge (from a block the header
  // dominates) and an entry from outside.
  cfg.counted.assign(nb, false);
  for (int b = 0; b < nb; ++b) {
    if (cfg.preds[b].size() != 2) continue;
    const int p0 = cfg.preds[b][0], p1 = cfg.preds[b][1];
    if (p0 == b || p1 == b || p0 == p1) continue;
    const bool back0 = cfg.dom[p0][b], back1 = cfg.dom[p1][b];
    if (back0 == back1) continue;
    cfg.counted[b] = true;
    if (back0) std::swap(cfg.preds[b][0], cfg.preds[b][1]);  // [outside, back edge]
  }
  return cfg;
}

int innermost_loop(const std::vector<std::vector<int>>& preds,
                   const std::vector<std::vector<bool>>& dom, int b) {
  const int nb = static_cast<int>(preds.size());
  int innermost = -1;
  size_t innermost_size = 0;
  for (int h = 0; h < nb; ++h)
    for (int latch : preds[h]) {
      if (!dom[latch][h]) continue;  // not a back edge
      std::vector<bool> in(nb, false);
      in[h] = true;
      std::vector<int> work{latch};
      size_t size = 1;
      while (!work.empty()) {
        const int x = work.back();
        work.pop_back();
        if (in[x]) continue;
        in[x] = true;
        ++size;
        for (int p : preds[x])
          work.push_back(p);
      }
      if (in[b] && (innermost < 0 || size < innermost_size)) {
        innermost = h;
        innermost_size = size;
      }
    }
  return innermost;
}

}  // namespace ab
