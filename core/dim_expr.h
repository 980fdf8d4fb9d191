// A tensor dim as an expression of the model's dynamic dims ("N" for the batch): how the engine
// knows which dims of every value follow the batch, without building the model twice.
//
// Shape functions (core/shape_inference.h) compute output dims from input dims; each Dim carries
// its value at the shapes being built and, beside it, this expression. Expressions are immutable
// and shared; the few simplifications below keep the common forms readable ("3*N", not
// "((N*147)//49)") and comparable. Anything they do not simplify is still evaluated exactly.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qdqrt {

// Values of the symbols an expression is evaluated at.
using SymbolValues = std::map<std::string, int64_t>;

class DimExpr {
 public:
  // Default: no expression (the dim's dependence on the symbols is not known).
  DimExpr() = default;
  static DimExpr constant(int64_t value);
  static DimExpr symbol(const std::string& name);

  bool known() const { return node_ != nullptr; }
  bool is_constant() const;
  // The value of a constant expression; nullopt for a symbolic or unknown one.
  std::optional<int64_t> constant_value() const;
  // Evaluates at `values`; nullopt when unknown, a symbol has no value, or on division by zero or
  // overflow.
  std::optional<int64_t> evaluate(const SymbolValues& values) const;
  bool depends_on(const std::string& symbol) const;
  // The symbols the expression reads, sorted.
  std::vector<std::string> symbols() const;
  // "N", "3*N", "(N+1)//2"; "?" when unknown.
  std::string to_string() const;

  // Structurally equal (after the simplifications); both unknown compare unequal.
  bool same_as(const DimExpr& other) const;

  // Arithmetic; unknown when either side is unknown.
  friend DimExpr operator+(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator-(const DimExpr& a, const DimExpr& b);
  friend DimExpr operator*(const DimExpr& a, const DimExpr& b);
  friend DimExpr floor_div(const DimExpr& a, const DimExpr& b);
  friend DimExpr ceil_div(const DimExpr& a, const DimExpr& b);
  friend DimExpr mod(const DimExpr& a, const DimExpr& b);
  friend DimExpr max(const DimExpr& a, const DimExpr& b);
  friend DimExpr min(const DimExpr& a, const DimExpr& b);

  struct Node;

 private:
  explicit DimExpr(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  static DimExpr make(int kind, DimExpr a, DimExpr b);
  std::shared_ptr<const Node> node_;
};

}  // namespace qdqrt
