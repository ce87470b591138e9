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

// -----

// == matmul ==

func.func @matmul_element_types(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) {
  // expected-error @+1 {{'graph.matmul' op operand #1 (b) has element type f16, but a has f32; both must be equal}}
  %0 = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf16>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @matmul_i1(%a: tensor<2x2xi1>) {
  // expected-error @+1 {{'graph.matmul' op operands #0 (a) and #1 (b) of 'graph.matmul' must not be i1}}
  %0 = graph.matmul %a, %a : (tensor<2x2xi1>, tensor<2x2xi1>) -> tensor<2x2xi1>
  func.return
}

// -----

// Rank-1 operands are not promoted as numpy promotes them: the importer reshapes them.
func.func @matmul_vector(%a: tensor<2x3xf32>, %v: tensor<3xf32>) {
  // expected-error @+1 {{'graph.matmul' op operand #1 (b) must have rank 2 or more, got tensor<3xf32> (reshape a vector to a 1xK or Kx1 matrix)}}
  %0 = graph.matmul %a, %v : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @matmul_inner(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{'graph.matmul' op operand #1 (b) of shape 4x5 has 4 rows, but operand #0 (a) of shape 2x3 has 3 columns; they must be equal}}
  %0 = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return
}

// -----

func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<3x3x4xf32>) {
  // expected-error @+1 {{'graph.matmul' op batch dimensions 3 of operand #1 (b) do not broadcast with batch dimensions 2 of operand #0 (a)}}
  %0 = graph.matmul %a, %b : (tensor<2x2x3xf32>, tensor<3x3x4xf32>) -> tensor<2x2x4xf32>
  func.return
}

// -----

func.func @matmul_result(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{'graph.matmul' op result type tensor<4x2xf32> does not match the matrix product of the operands; expected tensor<2x4xf32>}}
  %0 = graph.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

func.func @matmul_dynamic(%a: tensor<?x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+1 {{'graph.matmul' op operand #0 (a) has a dynamic shape (tensor<?x3xf32>); mlc needs static shapes}}
  %0 = graph.matmul %a, %b : (tensor<?x3xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

// == transpose ==

func.func @transpose_length(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.transpose' op property 'perm' = [1, 0, 2] must have one entry per dimension of operand #0 (x) of rank 2}}
  %0 = graph.transpose %a perm [1, 0, 2] : tensor<2x3xf32> to tensor<3x2xf32>
  func.return
}

// -----

func.func @transpose_out_of_range(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.transpose' op entry 2 of property 'perm' is out of range for operand #0 (x) of rank 2 (expected -2 <= axis < 2)}}
  %0 = graph.transpose %a perm [2, 0] : tensor<2x3xf32> to tensor<3x2xf32>
  func.return
}

// -----

// -1 and 1 name the same dimension of a rank-2 tensor.
func.func @transpose_not_permutation(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.transpose' op property 'perm' = [-1, 1] is not a permutation of the 2 dimensions of operand #0 (x)}}
  %0 = graph.transpose %a perm [-1, 1] : tensor<2x3xf32> to tensor<3x3xf32>
  func.return
}

// -----

func.func @transpose_result(%a: tensor<2x3x4xf32>) {
  // expected-error @+1 {{'graph.transpose' op result type tensor<4x3x2xf32> does not match the transpose of operand #0 (x) by 'perm'; expected tensor<3x4x2xf32>}}
  %0 = graph.transpose %a perm [1, 2, 0] : tensor<2x3x4xf32> to tensor<4x3x2xf32>
  func.return
}

// -----

// perm is an array<i64: ...>, not a list attribute.
func.func @transpose_perm_type(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.transpose' op [1 : i64, 0 : i64] should be of base attribute array}}
  %0 = "graph.transpose"(%a) <{perm = [1, 0]}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}

// -----

// == Reductions ==

func.func @reduce_axis_out_of_range(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'graph.reduce_sum' op entry -3 of property 'axes' is out of range for operand #0 (x) of rank 2 (expected -2 <= axis < 2)}}
  %0 = graph.reduce_sum %a axes [-3] keepdims false : tensor<4x8xf32> to tensor<8xf32>
  func.return
}

// -----

func.func @reduce_duplicate_axes(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'graph.reduce_max' op property 'axes' = [1, -1] names an axis of operand #0 (x) more than once}}
  %0 = graph.reduce_max %a axes [1, -1] keepdims false : tensor<4x8xf32> to tensor<4xf32>
  func.return
}

// -----

func.func @reduce_result(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'graph.reduce_min' op result type tensor<4xf32> does not match the reduction of operand #0 (x) over 'axes'; expected tensor<4x1xf32>}}
  %0 = graph.reduce_min %a axes [1] keepdims true : tensor<4x8xf32> to tensor<4xf32>
  func.return
}

// -----

func.func @reduce_mean_integer(%a: tensor<4xi32>) {
  // expected-error @+1 {{'graph.reduce_mean' op operand #0 (x) must have a float element type, got i32}}
  %0 = graph.reduce_mean %a axes [0] keepdims false : tensor<4xi32> to tensor<i32>
  func.return
}

// -----

func.func @reduce_sum_i1(%a: tensor<4xi1>) {
  // expected-error @+1 {{'graph.reduce_sum' op operand #0 (x) of 'graph.reduce_sum' must not be i1}}
  %0 = graph.reduce_sum %a axes [0] keepdims false : tensor<4xi1> to tensor<i1>
  func.return
}

// -----

// keepdims is a BoolAttr (true, false, or 1 : i1), not an i64.
func.func @reduce_keepdims_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.reduce_sum' op Expected attribute i1 but got i64}}
  %0 = "graph.reduce_sum"(%a) <{axes = array<i64: 0>, keepdims = 1 : i64}> : (tensor<4xf32>) -> tensor<1xf32>
  func.return
}

// -----

func.func @reduce_missing_keepdims(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.reduce_sum' op property 'keepdims' expected in operation 'graph.reduce_sum'}}
  %0 = "graph.reduce_sum"(%a) <{axes = array<i64: 0>}> : (tensor<4xf32>) -> tensor<f32>
  func.return
}

// -----

// == softmax ==

func.func @softmax_axis(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{'graph.softmax' op property 'axis' = 2 is out of range for operand #0 (x) of rank 2 (expected -2 <= axis < 2)}}
  %0 = graph.softmax %a axis 2 : tensor<4x8xf32>
  func.return
}

// -----

func.func @softmax_integer(%a: tensor<4xi32>) {
  // expected-error @+1 {{'graph.softmax' op operand #0 (x) must have a float element type, got i32}}
  %0 = graph.softmax %a axis 0 : tensor<4xi32>
  func.return
}

// -----

func.func @softmax_result(%a: tensor<4xf32>) {
  // expected-error @+1 {{attribute tensor<4xf32> expected from variable 'T', but got tensor<4xf16>}}
  %0 = "graph.softmax"(%a) <{axis = 0 : i64}> : (tensor<4xf32>) -> tensor<4xf16>
  func.return
}

// -----

// == layer_norm ==

func.func @layer_norm_axis(%x: tensor<4x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'graph.layer_norm' op property 'axis' = -3 is out of range for operand #0 (x) of rank 2 (expected -2 <= axis < 2)}}
  %0 = graph.layer_norm %x, %s, %s axis -3 epsilon 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @layer_norm_scale_shape(%x: tensor<4x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'graph.layer_norm' op operand #1 (scale) of shape 8 must have the shape 4x8 of the normalised dimensions 0..1 of operand #0 (x)}}
  %0 = graph.layer_norm %x, %s, %s axis 0 epsilon 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

// scale and bias do not broadcast: they have exactly the normalised dimensions' shape.
func.func @layer_norm_bias_shape(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %b: tensor<1xf32>) {
  // expected-error @+1 {{'graph.layer_norm' op operand #2 (bias) of shape 1 must have the shape 8 of the normalised dimensions 1..1 of operand #0 (x)}}
  %0 = graph.layer_norm %x, %s, %b axis 1 epsilon 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<1xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @layer_norm_element_type(%x: tensor<4x8xf32>, %s: tensor<8xf16>) {
  // expected-error @+1 {{'graph.layer_norm' op operand #1 (scale) has element type f16, but x has f32; both must be equal}}
  %0 = graph.layer_norm %x, %s, %s axis 1 epsilon 1.0e-05 : (tensor<4x8xf32>, tensor<8xf16>, tensor<8xf16>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @layer_norm_integer(%x: tensor<4x8xi32>, %s: tensor<8xi32>) {
  // expected-error @+1 {{'graph.layer_norm' op operand #0 (x) must have a float element type, got i32}}
  %0 = graph.layer_norm %x, %s, %s axis 1 epsilon 1.0e-05 : (tensor<4x8xi32>, tensor<8xi32>, tensor<8xi32>) -> tensor<4x8xi32>
  func.return
}

// -----

func.func @layer_norm_epsilon(%x: tensor<4x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'graph.layer_norm' op property 'epsilon' = -1.0 must be finite and not negative}}
  %0 = graph.layer_norm %x, %s, %s axis 1 epsilon -1.0 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @layer_norm_result(%x: tensor<4x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'graph.layer_norm' op result type tensor<4x8xf16> does not match the type of operand #0 (x); expected tensor<4x8xf32>}}
  %0 = graph.layer_norm %x, %s, %s axis 1 epsilon 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf16>
  func.return
}

// -----

// epsilon is an f32: an untyped float literal is an f64 in the generic form.
func.func @layer_norm_epsilon_type(%x: tensor<4x8xf32>, %s: tensor<8xf32>) {
  // expected-error @+1 {{'graph.layer_norm' op f64 should be of base attribute f32}}
  %0 = "graph.layer_norm"(%x, %s, %s) <{axis = 1 : i64, epsilon = 1.0e-05}> : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

// == conv2d ==

func.func @conv_x_rank(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op operand #0 (x) must have rank 4 (N, C, H, W), got tensor<3x8x8xf32>}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<4x6x6xf32>
  func.return
}

// -----

func.func @conv_w_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op operand #1 (w) must have rank 4 (O, C / group, kH, kW), got tensor<4x3x3xf32>}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @conv_integer(%x: tensor<1x3x8x8xi32>, %w: tensor<4x3x3x3xi32>) {
  // expected-error @+1 {{'graph.conv2d' op operand #0 (x) must have a float element type, got i32}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x3x8x8xi32>, tensor<4x3x3x3xi32>) -> tensor<1x4x6x6xi32>
  func.return
}

// -----

func.func @conv_w_element_type(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf16>) {
  // expected-error @+1 {{'graph.conv2d' op operand #1 (w) has element type f16, but x has f32; both must be equal}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @conv_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op operand #1 (w) of shape 4x2x3x3 must have 3 input channels (dimension 1): the 3 channels of operand #0 (x) divided by group 1}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @conv_group_divides(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op property 'group' = 4 must divide the 4 channels of operand #0 (x) and the 6 output channels of operand #1 (w)}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 4 : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  func.return
}

// -----

func.func @conv_group_positive(%x: tensor<1x4x8x8xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op property 'group' = 0 must be positive}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 0 : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x6x6xf32>
  func.return
}

// -----

func.func @conv_empty_kernel(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x0x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op operand #1 (w) of shape 4x3x0x3 has an empty kernel}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x3x8x8xf32>, tensor<4x3x0x3xf32>) -> tensor<1x4x9x6xf32>
  func.return
}

// -----

func.func @conv_bias_shape(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op operand #2 (bias) of shape 3 must have the shape 4 of the output channels of operand #1 (w)}}
  %0 = graph.conv2d %x, %w, %b strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @conv_bias_element_type(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{'graph.conv2d' op operand #2 (bias) has element type f16, but x has f32; both must be equal}}
  %0 = graph.conv2d %x, %w, %b strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf16>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @conv_window_too_large(%x: tensor<1x3x4x4xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op the window of 5x5 elements (dilated kernel) is larger than the padded spatial dimensions 4x5 of operand #0 (x)}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [0, 1, 0, 0] dilations [2, 2] group 1 : (tensor<1x3x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x1x1xf32>
  func.return
}

// -----

func.func @conv_strides_length(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op property 'strides' must have 2 entries (height, width), got [1]}}
  %0 = graph.conv2d %x, %w strides [1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @conv_strides_positive(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op property 'strides' entries must be positive, got [1, 0]}}
  %0 = graph.conv2d %x, %w strides [1, 0] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @conv_pads_length(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op property 'pads' must have 4 entries (top, left, bottom, right), got [1, 1]}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [1, 1] dilations [1, 1] group 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

func.func @conv_pads_negative(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op property 'pads' entries must be non-negative, got [0, -1, 0, 0]}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [0, -1, 0, 0] dilations [1, 1] group 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x5xf32>
  func.return
}

// -----

func.func @conv_dilations_length(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op property 'dilations' must have 2 entries (height, width), got [1, 1, 1]}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1, 1] group 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @conv_dilations_positive(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op property 'dilations' entries must be positive, got [0, 1]}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [0, 1] group 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

func.func @conv_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op result type tensor<1x4x8x8xf32> does not match the convolution of the operands; expected tensor<1x4x6x6xf32>}}
  %0 = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

func.func @conv_missing_group(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'graph.conv2d' op property 'group' expected in operation 'graph.conv2d'}}
  %0 = "graph.conv2d"(%x, %w) <{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}> : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  func.return
}

// -----

// == max_pool2d, avg_pool2d ==

func.func @pool_rank(%x: tensor<3x8x8xf32>) {
  // expected-error @+1 {{'graph.max_pool2d' op operand #0 (x) must have rank 4 (N, C, H, W), got tensor<3x8x8xf32>}}
  %0 = graph.max_pool2d %x kernel [2, 2] strides [2, 2] pads [0, 0, 0, 0] : tensor<3x8x8xf32> to tensor<3x4x4xf32>
  func.return
}

// -----

func.func @pool_integer(%x: tensor<1x3x8x8xi32>) {
  // expected-error @+1 {{'graph.avg_pool2d' op operand #0 (x) must have a float element type, got i32}}
  %0 = graph.avg_pool2d %x kernel [2, 2] strides [2, 2] pads [0, 0, 0, 0] : tensor<1x3x8x8xi32> to tensor<1x3x4x4xi32>
  func.return
}

// -----

func.func @pool_kernel_length(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{'graph.max_pool2d' op property 'kernel' must have 2 entries (height, width), got [2, 2, 2]}}
  %0 = graph.max_pool2d %x kernel [2, 2, 2] strides [2, 2] pads [0, 0, 0, 0] : tensor<1x3x8x8xf32> to tensor<1x3x4x4xf32>
  func.return
}

// -----

func.func @pool_kernel_positive(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{'graph.avg_pool2d' op property 'kernel' entries must be positive, got [0, 2]}}
  %0 = graph.avg_pool2d %x kernel [0, 2] strides [2, 2] pads [0, 0, 0, 0] : tensor<1x3x8x8xf32> to tensor<1x3x4x4xf32>
  func.return
}

// -----

// A pad as large as the kernel would make windows of padding only (no maximum, no average).
func.func @pool_pads_kernel(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{'graph.max_pool2d' op property 'pads' = [0, 0, 0, 2] must be smaller than the kernel [3, 2] along each axis, so that no window is only padding}}
  %0 = graph.max_pool2d %x kernel [3, 2] strides [1, 1] pads [0, 0, 0, 2] : tensor<1x3x8x8xf32> to tensor<1x3x6x9xf32>
  func.return
}

// -----

func.func @pool_window_too_large(%x: tensor<1x3x2x8xf32>) {
  // expected-error @+1 {{'graph.avg_pool2d' op the window of 3x3 elements (dilated kernel) is larger than the padded spatial dimensions 2x8 of operand #0 (x)}}
  %0 = graph.avg_pool2d %x kernel [3, 3] strides [1, 1] pads [0, 0, 0, 0] : tensor<1x3x2x8xf32> to tensor<1x3x1x6xf32>
  func.return
}

// -----

func.func @pool_result(%x: tensor<1x3x8x8xf32>) {
  // expected-error @+1 {{'graph.max_pool2d' op result type tensor<1x3x4x4xf32> does not match the pooling of operand #0 (x); expected tensor<1x3x7x7xf32>}}
  %0 = graph.max_pool2d %x kernel [2, 2] strides [1, 1] pads [0, 0, 0, 0] : tensor<1x3x8x8xf32> to tensor<1x3x4x4xf32>
  func.return
}

// -----

// == concat ==

func.func @concat_no_operands() {
  // expected-error @+1 {{'graph.concat' op 'graph.concat' needs at least one operand}}
  %0 = "graph.concat"() <{axis = 0 : i64}> : () -> tensor<0xf32>
  func.return
}

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.concat' op property 'axis' = 2 is out of range for operand #0 (xs[0]) of rank 2 (expected -2 <= axis < 2)}}
  %0 = graph.concat %a, %a axis 2 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return
}

// -----

func.func @concat_scalar(%a: tensor<f32>) {
  // expected-error @+1 {{'graph.concat' op property 'axis' = 0 is out of range for operand #0 (xs[0]) of rank 0 (expected 0 <= axis < 0)}}
  %0 = graph.concat %a, %a axis 0 : (tensor<f32>, tensor<f32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @concat_element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) {
  // expected-error @+1 {{'graph.concat' op operand #1 (xs[1]) has element type i32, but operand #0 (xs[0]) has f32; both must be equal}}
  %0 = graph.concat %a, %b axis 0 : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @concat_shapes(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) {
  // expected-error @+1 {{'graph.concat' op operand #1 (xs[1]) of shape 2x4 does not match operand #0 (xs[0]) of shape 2x3 outside the concatenation axis 0}}
  %0 = graph.concat %a, %b axis 0 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @concat_ranks(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+1 {{'graph.concat' op operand #2 (xs[2]) of shape 2x3x1 does not match operand #0 (xs[0]) of shape 2x3 outside the concatenation axis 1}}
  %0 = graph.concat %a, %a, %b axis 1 : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<2x7xf32>
  func.return
}

// -----

func.func @concat_result(%a: tensor<2x3xf32>) {
  // expected-error @+1 {{'graph.concat' op result type tensor<4x6xf32> does not match the concatenation of the operands; expected tensor<2x6xf32>}}
  %0 = graph.concat %a, %a axis -1 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x6xf32>
  func.return
}

// -----

// == slice ==

func.func @slice_starts_length(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'graph.slice' op property 'starts' = [0] must have one entry per dimension of operand #0 (x) of rank 2}}
  %0 = graph.slice %a starts [0] ends [4, 4] steps [1, 1] : tensor<4x4xf32> to tensor<4x4xf32>
  func.return
}

// -----

func.func @slice_ends_length(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'graph.slice' op property 'ends' = [4, 4, 4] must have one entry per dimension of operand #0 (x) of rank 2}}
  %0 = graph.slice %a starts [0, 0] ends [4, 4, 4] steps [1, 1] : tensor<4x4xf32> to tensor<4x4xf32>
  func.return
}

// -----

func.func @slice_steps_length(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'graph.slice' op property 'steps' = [] must have one entry per dimension of operand #0 (x) of rank 2}}
  %0 = graph.slice %a starts [0, 0] ends [4, 4] steps [] : tensor<4x4xf32> to tensor<4x4xf32>
  func.return
}

// -----

func.func @slice_zero_step(%a: tensor<4x4xf32>) {
  // expected-error @+1 {{'graph.slice' op property 'steps' = [1, 0] must not contain 0}}
  %0 = graph.slice %a starts [0, 0] ends [4, 4] steps [1, 0] : tensor<4x4xf32> to tensor<4x4xf32>
  func.return
}

// -----

// end = -1 is the last element (numpy), not "through index 0": this slice is empty.
func.func @slice_result(%a: tensor<4xf32>) {
  // expected-error @+1 {{'graph.slice' op result type tensor<4xf32> does not match the slice of operand #0 (x); expected tensor<0xf32>}}
  %0 = graph.slice %a starts [3] ends [-1] steps [-1] : tensor<4xf32> to tensor<4xf32>
  func.return
}

// -----

// graph.fusion

func.func @fusion_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.fusion' op unknown kind 'injective'; expected one of elementwise, reduction, matmul, conv, chain, opaque}}
  %0 = graph.fusion injective (%a = %x : tensor<4xf32>) -> tensor<4xf32> {
    graph.yield %a : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}

// -----

func.func @fusion_argument_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.fusion' op the body takes 2 arguments, but the op has 1 operands; they must correspond one to one}}
  %0 = "graph.fusion"(%x) <{kind = "elementwise"}> ({
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    "graph.yield"(%a) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @fusion_argument_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.fusion' op body argument #0 has type tensor<4xf16>, but operand #0 has type tensor<4xf32>}}
  %0 = "graph.fusion"(%x) <{kind = "elementwise"}> ({
  ^bb0(%a: tensor<4xf16>):
    %1 = graph.cast %a : tensor<4xf16> to tensor<4xf32>
    "graph.yield"(%1) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @fusion_yield_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.fusion' op 'graph.yield' returns 2 values, but the op has 1 results}}
  %0 = graph.fusion elementwise (%a = %x : tensor<4xf32>) -> tensor<4xf32> {
    graph.yield %a, %a : tensor<4xf32>, tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}

// -----

func.func @fusion_yield_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.fusion' op yielded value #0 has type tensor<4xi1>, but result #0 has type tensor<4xf32>}}
  %0 = graph.fusion elementwise (%a = %x : tensor<4xf32>) -> tensor<4xf32> {
    %1 = graph.cmp lt, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    graph.yield %1 : tensor<4xi1>
  }
  func.return %0 : tensor<4xf32>
}

// -----

func.func @fusion_result_type(%x: tensor<4xf32>) -> memref<4xf32> {
  // expected-error @+1 {{'graph.fusion' op result #0 must be a tensor, got memref<4xf32>}}
  %0 = "graph.fusion"(%x) <{kind = "elementwise"}> ({
  ^bb0(%a: tensor<4xf32>):
    "graph.yield"(%a) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> memref<4xf32>
  func.return %0 : memref<4xf32>
}

// -----

func.func @fusion_without_yield(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.fusion' op the body must end with 'graph.yield'}}
  %0 = "graph.fusion"(%x) <{kind = "elementwise"}> ({
  ^bb0(%a: tensor<4xf32>):
    %1 = "graph.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @fusion_foreign_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.fusion' op 'arith.constant' is not a graph op; a fusion body holds graph ops only}}
  %0 = graph.fusion elementwise (%a = %x : tensor<4xf32>) -> tensor<4xf32> {
    %c = arith.constant 1 : index
    graph.yield %a : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}

// -----

func.func @fusion_nested(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.fusion' op a 'graph.fusion' may not hold another 'graph.fusion'}}
  %0 = graph.fusion elementwise (%a = %x : tensor<4xf32>) -> tensor<4xf32> {
    %1 = graph.fusion elementwise (%b = %a : tensor<4xf32>) -> tensor<4xf32> {
      graph.yield %b : tensor<4xf32>
    }
    graph.yield %1 : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}

// -----

func.func @fusion_not_isolated(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.fusion' op operand #1 of 'graph.add' in the body is defined outside the fusion; values from outside must enter as operands of the fusion}}
  %0 = graph.fusion elementwise (%a = %x : tensor<4xf32>) -> tensor<4xf32> {
    %1 = graph.add %a, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    graph.yield %1 : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}

// -----

func.func @yield_outside_fusion(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.yield' op 'graph.yield' expects parent op 'graph.fusion'}}
  graph.yield %x : tensor<4xf32>
}

// -----

func.func @matmul_unknown_precision(%a: tensor<2x2xf32>) {
  // expected-error @+1 {{'graph.matmul' op precision must be one of 'ieee', 'tf32', '3xtf32', got 'fp8'}}
  %0 = graph.matmul %a, %a {precision = "fp8"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return
}

// -----

func.func @matmul_tf32_of_bf16(%a: tensor<2x2xbf16>) {
  // expected-error @+1 {{'graph.matmul' op precision 'tf32' applies to f32 operands only (f16 and bf16 products are exact in f32)}}
  %0 = graph.matmul %a, %a {precision = "tf32"} : (tensor<2x2xbf16>, tensor<2x2xbf16>) -> tensor<2x2xbf16>
  func.return
}

// -----

func.func @matmul_precision_not_a_string(%a: tensor<2x2xf32>) {
  // expected-error @+1 {{'graph.matmul' op 32 : i64 should be of base attribute string}}
  %0 = "graph.matmul"(%a, %a) <{precision = 32 : i64}> : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return
}
