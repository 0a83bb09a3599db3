// The recurrent op `rnn` (ONNX LSTM, GRU and RNN): its attributes and result-type rule, shared by the verifier, the interpreter, the importer and codegen.
#pragma once

#include <cstdint>
#include <string>

#include "ir/IR.h"

namespace dscc {

/// Which ONNX cell an `rnn` computes.
enum class RnnCell { Lstm, Gru, Rnn };
/// Which way(s) an `rnn` walks the sequence.
enum class RnnDirection { Forward, Reverse, Bidirectional };
/// Which of ONNX's outputs an `rnn` op yields (one op per output used).
enum class RnnOutput { Y, YH, YC };

/// The attributes of one `rnn`, read and checked.
struct RnnAttrs {
  RnnCell cell = RnnCell::Lstm;
  RnnDirection direction = RnnDirection::Forward;
  RnnOutput output = RnnOutput::Y;
  int64_t hidden = 0;              ///< hidden_size
  bool linearBeforeReset = false;  ///< gru only
  /// 1 or 2.
  int64_t dirs() const { return direction == RnnDirection::Bidirectional ? 2 : 1; }
  /// Gates per cell: 4 (lstm: i, o, f, c), 3 (gru: z, r, h), 1 (rnn).
  int64_t gates() const { return cell == RnnCell::Lstm ? 4 : cell == RnnCell::Gru ? 3 : 1; }
};

/// Reads the attributes of `op` (an `rnn`). Returns "" or a message; on error `where` is the offending
/// attribute's location (or the op's).
std::string readRnnAttrs(const Operation& op, RnnAttrs& out, Location& where);

/// The attribute spellings ("lstm", "bidirectional", "y_h", ...).
const char* rnnCellName(RnnCell c);
const char* rnnDirectionName(RnnDirection d);
const char* rnnOutputName(RnnOutput o);

}  // namespace dscc
