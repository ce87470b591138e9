// Every diagnostic of the graph dialect's verifiers (and the IRDL checks they rely on), one chunk each.
// RUN: mlc-opt %s --split-input-file --verify-diagnostics

// == Shapes and element types of every operand and result (verify_tensor) ==

func.func @dynamic_operand(%a: tensor<?xf32>) {
  // expected-error @+1 {{'graph.exp' op operand #0 (x) has a dynamic shape (tensor<?xf32>); mlc needs static shapes}}
  %0 = graph.exp %a : tensor<?xf32>
  func.return
}

// -----

func.func @dynamic_rhs(%a: tensor<4xf32>, %b: tensor<4x?xf32>) {
  // expected-error @+1 {{'graph.add' op operand #1 (rhs) has a dynamic shape (tensor<4x?xf32>); mlc needs static shapes}}
  %0 = graph.add %a, %b : (tensor<4xf32>, tensor<4x?xf32>) -> tensor<4x4xf32>
  func.return
}

// -----

func.func @dynamic_result(%a: tensor<12xf32>) {
  // expected-error @+1 {{'graph.reshape' op result has a dynamic shape (tensor<?x4xf32>); mlc needs static shapes}}
  %0 = graph.reshape %a : tensor<12xf32> to tensor<?x4xf32>
  func.return
}

// -----

func.func @f64_operand(%a: tensor<4xf64>) {
  // expected-error @+1 {{'graph.add' op operand #0 (lhs) has unsupported element type f64 (supported: f32, f16, bf16, i32, i64, i1)}}
  %0 = graph.add %a, %a : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return
}

// -----

func.func @i8_operand(%a: tensor<2x2xi8>) {
  // expected-error @+1 {{'graph.neg' op operand #0 (x) has unsupported element type i8}}
  %0 = graph.neg %a : tensor<2x2xi8>
  func.return
}

// -----

func.func @f64_constant() {
  // expected-error @+1 {{'graph.constant' op result has unsupported element type f64}}
  %0 = graph.constant dense<1.0> : tensor<4xf64>
  func.return
}

// -----

// An operand that is not a tensor is rejected by the op's IRDL constraint while parsing.
func.func @memref_operand(%a: memref<4xf32>) {
  // expected-error @+1 {{memref<4xf32> should be of base attribute tensor}}
  %0 = graph.add %a, %a : (memref<4xf32>, memref<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// == Binary ops ==

func.func @binary_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'graph.mul' op operand #1 (rhs) has element type f16, but lhs has f32; both must be equal}}
  %0 = graph.mul %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  func.return
}

// -----

func.func @binary_i1(%a: tensor<4xi1>) {
  // expected-error @+1 {{'graph.add' op operands #0 (lhs) and #1 (rhs) have element type i1, which 'graph.add' does not accept}}
  %0 = graph.add %a, %a : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @binary_not_broadcastable(%a: tensor<2x4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'graph.sub' op operand #1 (rhs) of shape 3 does not broadcast with lhs of shape 2x4}}
  %0 = graph.sub %a, %b : (tensor<2x4xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @binary_result_shape(%a: tensor<4xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{'graph.add' op result type tensor<4xf32> does not match the broadcast of the operands; expected tensor<3x4xf32>}}
  %0 = graph.add %a, %b : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @binary_result_element_type(%a: tensor<i32>) {
  // expected-error @+1 {{'graph.max' op result type tensor<f32> does not match the broadcast of the operands; expected tensor<i32>}}
  %0 = graph.max %a, %a : (tensor<i32>, tensor<i32>) -> tensor<f32>
  func.return
}

// -----

// == cmp ==

func.func @cmp_unknown_predicate(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.cmp' op unknown predicate 'lte'; expected one of eq, ne, lt, le, gt, ge}}
  %0 = graph.cmp lte, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @cmp_predicate_case(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.cmp' op unknown predicate 'LT'; expected one of eq, ne, lt, le, gt, ge}}
  %0 = "graph.cmp"(%a, %a) <{predicate = "LT"}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @cmp_missing_predicate(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.cmp' op property 'predicate' expected in operation 'graph.cmp'}}
  %0 = "graph.cmp"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @cmp_result_not_i1(%a: tensor<4xf32>, %b: tensor<2x1xf32>) {
  // expected-error @+1 {{'graph.cmp' op result type tensor<2x4xf32> does not match the broadcast of the operands; expected tensor<2x4xi1>}}
  %0 = graph.cmp eq, %a, %b : (tensor<4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// == where ==

func.func @where_condition_not_i1(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.where' op operand #0 (condition) must have element type i1, got f32}}
  %0 = graph.where %c, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @where_element_types(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xi32>) {
  // expected-error @+1 {{'graph.where' op operand #2 (false_value) has element type i32, but true_value has f32; both must be equal}}
  %0 = graph.where %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @where_true_not_broadcastable(%c: tensor<3xi1>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.where' op operand #1 (true_value) of shape 4 does not broadcast with condition of shape 3}}
  %0 = graph.where %c, %a, %a : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @where_false_not_broadcastable(%c: tensor<3x1xi1>, %a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error @+1 {{'graph.where' op operand #2 (false_value) of shape 5 does not broadcast with shape 3x4 of condition and true_value}}
  %0 = graph.where %c, %a, %b : (tensor<3x1xi1>, tensor<4xf32>, tensor<5xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

func.func @where_result(%c: tensor<3x1xi1>, %a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.where' op result type tensor<4xf32> does not match the broadcast of the operands; expected tensor<3x4xf32>}}
  %0 = graph.where %c, %a, %a : (tensor<3x1xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// == Unary ops ==

func.func @float_only_integer(%a: tensor<4xi32>) {
  // expected-error @+1 {{'graph.exp' op operand #0 (x) must have a float element type, got i32}}
  %0 = graph.exp %a : tensor<4xi32>
  func.return
}

// -----

func.func @float_only_i1(%a: tensor<i1>) {
  // expected-error @+1 {{'graph.sigmoid' op operand #0 (x) must have a float element type, got i1}}
  %0 = graph.sigmoid %a : tensor<i1>
  func.return
}

// -----

func.func @neg_i1(%a: tensor<4xi1>) {
  // expected-error @+1 {{'graph.neg' op operand #0 (x) of 'graph.neg' must not be i1}}
  %0 = graph.neg %a : tensor<4xi1>
  func.return
}

// -----

// The result type of a unary op is the operand's (an IRDL constraint, visible in the generic form).
func.func @unary_result_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{attribute tensor<4xf32> expected from variable 'T', but got tensor<4xf16>}}
  %0 = "graph.exp"(%a) : (tensor<4xf32>) -> tensor<4xf16>
  func.return
}

// -----

func.func @gelu_approximation(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.gelu' op approximate must be "none" or "tanh", got "fast"}}
  %0 = graph.gelu %a {approximate = "fast"} : tensor<4xf32>
  func.return
}

// -----

func.func @gelu_approximation_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.gelu' op 1 : i64 should be of base attribute string}}
  %0 = "graph.gelu"(%a) <{approximate = 1 : i64}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// == cast, broadcast, reshape ==

func.func @cast_shape(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.cast' op result shape 3x2 must equal the shape 2x3 of operand #0 (x)}}
  %0 = graph.cast %a : tensor<2x3xf32> to tensor<3x2xf16>
  func.return
}

// -----

func.func @broadcast_element_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.broadcast' op result element type f16 must equal the element type f32 of operand #0 (x)}}
  %0 = graph.broadcast %a : tensor<4xf32> to tensor<3x4xf16>
  func.return
}

// -----

func.func @broadcast_target(%a: tensor<3xf32>) {
  // expected-error @+1 {{'graph.broadcast' op operand #0 (x) of shape 3 cannot be broadcast to 2x4}}
  %0 = graph.broadcast %a : tensor<3xf32> to tensor<2x4xf32>
  func.return
}

// -----

// broadcast never removes dimensions, even of size 1.
func.func @broadcast_lower_rank(%a: tensor<1x3xf32>) {
  // expected-error @+1 {{'graph.broadcast' op operand #0 (x) of shape 1x3 cannot be broadcast to 3}}
  %0 = graph.broadcast %a : tensor<1x3xf32> to tensor<3xf32>
  func.return
}

// -----

func.func @reshape_element_type(%a: tensor<2x6xf32>) {
  // expected-error @+1 {{'graph.reshape' op result element type i32 must equal the element type f32 of operand #0 (x)}}
  %0 = graph.reshape %a : tensor<2x6xf32> to tensor<12xi32>
  func.return
}

// -----

func.func @reshape_element_count(%a: tensor<2x6xf32>) {
  // expected-error @+1 {{'graph.reshape' op operand #0 (x) has 12 elements but the result tensor<5x2xf32> has 10}}
  %0 = graph.reshape %a : tensor<2x6xf32> to tensor<5x2xf32>
  func.return
}

// -----

// == constant ==

func.func @constant_type() {
  // expected-error @+1 {{'graph.constant' op value of type tensor<4xf32> does not match the result type tensor<2x2xf32>}}
  %0 = "graph.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<2x2xf32>
  func.return
}

// -----

func.func @constant_not_dense() {
  // expected-error @+1 {{expected a dense elements attribute such as dense<1.0> : tensor<4xf32>, got 1.000000e+00 : f32}}
  %0 = graph.constant 1.0 : f32
  func.return
}
