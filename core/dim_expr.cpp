#include "core/dim_expr.h"

#include <algorithm>
#include <set>

namespace qdqrt {

namespace {

enum Kind : int { kConstant, kSymbol, kAdd, kMul, kFloorDiv, kMod, kMax, kMin };

}  // namespace

struct DimExpr::Node {
  int kind = kConstant;
  int64_t value = 0;   // kConstant
  std::string name;    // kSymbol
  DimExpr a, b;        // operands of the binary kinds
};

namespace {

std::optional<int64_t> apply(int kind, int64_t a, int64_t b) {
  int64_t result = 0;
  switch (kind) {
    case kAdd:
      if (__builtin_add_overflow(a, b, &result)) return std::nullopt;
      return result;
    case kMul:
      if (__builtin_mul_overflow(a, b, &result)) return std::nullopt;
      return result;
    case kFloorDiv: {
      if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
      int64_t q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      return q;
    }
    case kMod: {
      if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
      int64_t r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
    case kMax:
      return std::max(a, b);
    case kMin:
      return std::min(a, b);
    default:
      return std::nullopt;
  }
}

const char* operator_text(int kind) {
  switch (kind) {
    case kAdd: return "+";
    case kMul: return "*";
    case kFloorDiv: return "//";
    case kMod: return "%";
    case kMax: return "max";
    case kMin: return "min";
    default: return "?";
  }
}

}  // namespace

DimExpr DimExpr::constant(int64_t value) {
  auto node = std::make_shared<Node>();
  node->kind = kConstant;
  node->value = value;
  return DimExpr(std::move(node));
}

DimExpr DimExpr::symbol(const std::string& name) {
  auto node = std::make_shared<Node>();
  node->kind = kSymbol;
  node->name = name;
  return DimExpr(std::move(node));
}

bool DimExpr::is_constant() const { return node_ && node_->kind == kConstant; }

std::optional<int64_t> DimExpr::constant_value() const {
  if (!is_constant()) return std::nullopt;
  return node_->value;
}

std::optional<int64_t> DimExpr::evaluate(const SymbolValues& values) const {
  if (!node_) return std::nullopt;
  switch (node_->kind) {
    case kConstant:
      return node_->value;
    case kSymbol: {
      auto it = values.find(node_->name);
      if (it == values.end()) return std::nullopt;
      return it->second;
    }
    default: {
      std::optional<int64_t> a = node_->a.evaluate(values);
      if (!a) return std::nullopt;
      std::optional<int64_t> b = node_->b.evaluate(values);
      if (!b) return std::nullopt;
      return apply(node_->kind, *a, *b);
    }
  }
}

bool DimExpr::depends_on(const std::string& symbol) const {
  if (!node_) return false;
  if (node_->kind == kSymbol) return node_->name == symbol;
  if (node_->kind == kConstant) return false;
  return node_->a.depends_on(symbol) || node_->b.depends_on(symbol);
}

std::vector<std::string> DimExpr::symbols() const {
  std::set<std::string> found;
  std::vector<const Node*> stack;
  if (node_) stack.push_back(node_.get());
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    if (node->kind == kSymbol) found.insert(node->name);
    if (node->a.node_) stack.push_back(node->a.node_.get());
    if (node->b.node_) stack.push_back(node->b.node_.get());
  }
  return {found.begin(), found.end()};
}

std::string DimExpr::to_string() const {
  if (!node_) return "?";
  switch (node_->kind) {
    case kConstant:
      return std::to_string(node_->value);
    case kSymbol:
      return node_->name;
    case kMax:
    case kMin:
      return std::string(operator_text(node_->kind)) + "(" + node_->a.to_string() + ", " + node_->b.to_string() + ")";
    default: {
      auto operand = [](const DimExpr& e) {
        const bool leaf = e.node_ && (e.node_->kind == kConstant || e.node_->kind == kSymbol ||
                                      e.node_->kind == kMax || e.node_->kind == kMin);
        return leaf ? e.to_string() : "(" + e.to_string() + ")";
      };
      return operand(node_->a) + operator_text(node_->kind) + operand(node_->b);
    }
  }
}

bool DimExpr::same_as(const DimExpr& other) const {
  if (!node_ || !other.node_) return false;
  if (node_ == other.node_) return true;
  if (node_->kind != other.node_->kind) return false;
  switch (node_->kind) {
    case kConstant:
      return node_->value == other.node_->value;
    case kSymbol:
      return node_->name == other.node_->name;
    default:
      return node_->a.same_as(other.node_->a) && node_->b.same_as(other.node_->b);
  }
}

// Simplifies as it builds: constants fold; x+0, x*1, x*0, x//1; constant factors gather on the
// left of a product (c*(d*x) is (c*d)*x), so that (c*x)//d with d dividing c is (c/d)*x: the form a
// Reshape's inferred dim takes ((N*49*384)//(49*384) is N); and (c*x)//(d*x) is c//d.
DimExpr DimExpr::make(int kind, DimExpr a, DimExpr b) {
  if (!a.node_ || !b.node_) return DimExpr();
  std::optional<int64_t> ca = a.constant_value(), cb = b.constant_value();
  if (ca && cb) {
    std::optional<int64_t> folded = apply(kind, *ca, *cb);
    if (!folded) return DimExpr();  // overflow or division by zero: not a dim
    return constant(*folded);
  }
  if (kind == kAdd || kind == kMul || kind == kMax || kind == kMin) {
    if (ca && !cb) {  // constants on the left of commutative operators
      std::swap(a, b);
      std::swap(ca, cb);
    }
  }
  // From here at most b is constant... except for the non-commutative kinds, where a may be.
  if (kind == kAdd && cb == 0) return a;
  if (kind == kMul) {
    if (cb == 1) return a;
    if (cb == 0) return constant(0);
    // c * (d * x) -> (c*d) * x, written with the constant first.
    if (cb) {
      if (a.node_->kind == kMul && a.node_->a.is_constant()) {
        std::optional<int64_t> product = apply(kMul, *cb, a.node_->a.node_->value);
        if (product) return make(kMul, constant(*product), a.node_->b);
      }
      auto node = std::make_shared<Node>();
      node->kind = kMul;
      node->a = b;
      node->b = a;
      return DimExpr(std::move(node));
    }
    // (c*x) * (d*y) -> (c*d) * (x*y)
    const bool a_scaled = a.node_->kind == kMul && a.node_->a.is_constant();
    const bool b_scaled = b.node_->kind == kMul && b.node_->a.is_constant();
    if (a_scaled || b_scaled) {
      const int64_t c = a_scaled ? a.node_->a.node_->value : 1;
      const int64_t d = b_scaled ? b.node_->a.node_->value : 1;
      std::optional<int64_t> product = apply(kMul, c, d);
      if (product) {
        return make(kMul, constant(*product), make(kMul, a_scaled ? a.node_->b : a, b_scaled ? b.node_->b : b));
      }
    }
  }
  if (kind == kFloorDiv && cb) {
    if (*cb == 1) return a;
    // (c*x) // d with d | c -> (c/d)*x (x is a dim: the division is exact).
    if (*cb > 0 && a.node_->kind == kMul && a.node_->a.is_constant() && a.node_->a.node_->value % *cb == 0) {
      return make(kMul, constant(a.node_->a.node_->value / *cb), a.node_->b);
    }
  }
  if (kind == kFloorDiv && !ca && !cb) {
    // (c*x) // (d*x) -> c // d: x is a product of dims, at least 1 wherever the division is
    // defined (a Reshape's -1 inferred as numel // the other dims: (1204224*N)//(192*N) is 6272).
    auto split = [](const DimExpr& e) -> std::pair<int64_t, DimExpr> {
      if (e.node_->kind == kMul && e.node_->a.is_constant()) return {e.node_->a.node_->value, e.node_->b};
      return {1, e};
    };
    const auto [c, x] = split(a);
    const auto [d, y] = split(b);
    if (c >= 0 && d > 0 && x.same_as(y)) return constant(c / d);
  }
  if ((kind == kMax || kind == kMin) && a.same_as(b)) return a;
  auto node = std::make_shared<Node>();
  node->kind = kind;
  node->a = std::move(a);
  node->b = std::move(b);
  return DimExpr(std::move(node));
}

DimExpr operator+(const DimExpr& a, const DimExpr& b) { return DimExpr::make(kAdd, a, b); }
DimExpr operator-(const DimExpr& a, const DimExpr& b) {
  return DimExpr::make(kAdd, a, DimExpr::make(kMul, DimExpr::constant(-1), b));
}
DimExpr operator*(const DimExpr& a, const DimExpr& b) { return DimExpr::make(kMul, a, b); }
DimExpr floor_div(const DimExpr& a, const DimExpr& b) { return DimExpr::make(kFloorDiv, a, b); }
DimExpr ceil_div(const DimExpr& a, const DimExpr& b) {
  // ceil(a / b) = -floor(-a / b)
  const DimExpr minus_one = DimExpr::constant(-1);
  return minus_one * floor_div(minus_one * a, b);
}
DimExpr mod(const DimExpr& a, const DimExpr& b) { return DimExpr::make(kMod, a, b); }
DimExpr max(const DimExpr& a, const DimExpr& b) { return DimExpr::make(kMax, a, b); }
DimExpr min(const DimExpr& a, const DimExpr& b) { return DimExpr::make(kMin, a, b); }

}  // namespace qdqrt
